(((monthly-charge "acme") . "9900")
 ((monthly-charge "globex") . "900")
 ((monthly-charge "initech") . "2610")
 ((monthly-charge "hooli") . "7425"))
