-- startup: the smallest useful program.
print(1 + 2)
