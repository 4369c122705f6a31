(eq (ring-ref *events* 0) :sync)
(= (length (ring-items *events*)) 4)
