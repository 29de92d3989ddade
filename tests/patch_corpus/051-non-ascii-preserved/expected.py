# -*- coding: utf-8 -*-
GREETING = "héllo wörld"
NAMES = ["日本", "Ελλάδα", "🚀"]


def greet(name):
    # « bonjour » ✓
    return f"{GREETING}, {name.strip()}!"
