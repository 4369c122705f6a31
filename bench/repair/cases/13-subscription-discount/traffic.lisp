(monthly-charge "initech")
(monthly-charge "hooli")
