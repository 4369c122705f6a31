(((statement-line 1) . "\"Ada: 120 USD\"")
 ((statement-line 2) . "\"Grace: 75 USD\"")
 ((statement-line 3) . "\"Edsger: 300 EUR\"")
 ((statement-line 4) . "\"Barbara: 42 GBP\""))
