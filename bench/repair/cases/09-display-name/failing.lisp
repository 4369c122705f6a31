(display-name 2)
