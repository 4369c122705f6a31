(live-neighbors *board* 1 1)
(live-neighbors *board* 1 2)
(live-neighbors *board* 2 2)
