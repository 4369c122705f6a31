(display-name 1)
(display-name 3)
