class A:
    def f(self):
        return 1


def f(self):
    return 2
