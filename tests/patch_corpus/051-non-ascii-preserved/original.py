# -*- coding: utf-8 -*-
GREETING = "héllo wörld"
NAMES = ["日本", "Ελλάδα", "🚀"]


def greet(name):
    return f"{GREETING}, {name}!"
