//! What swarm knows of each language besides Python, one folder each.
//!
//! For now this holds JavaScript/TypeScript's pieces, built and tested on
//! their own; the language boundary the stages will call through (with
//! Python as its first implementation) comes later, and then each language
//! here registers behind it. Nothing here drives a stage or the loop.

pub mod javascript;
