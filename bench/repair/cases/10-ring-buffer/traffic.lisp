(ring-ref *events* 0)
(ring-ref *events* 1)
(ring-ref *events* -1)
(ring-ref *events* -2)
