(live-neighbors *board* 0 0)
