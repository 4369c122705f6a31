(= (live-neighbors *board* 1 1) 2)
(= (next-state *board* 1 1) 1)
