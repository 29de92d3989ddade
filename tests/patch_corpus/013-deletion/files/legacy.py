def old():
    pass
