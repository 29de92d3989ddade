def load(path):
    with open(path) as f:
        return f.read()


def load_backup(path):
    with open(path) as f:
        return f.read()
