(available-p "SCREW-M4" 5)
