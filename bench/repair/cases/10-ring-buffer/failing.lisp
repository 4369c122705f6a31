(ring-ref *events* -3)
