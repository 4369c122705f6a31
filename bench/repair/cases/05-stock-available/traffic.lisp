(available-p "BOLT-M6" 10)
(available-p "WASHER-M6" 1)
(available-p "NUT-M6" 350)
