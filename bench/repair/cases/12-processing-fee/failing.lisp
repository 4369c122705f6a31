(processing-fee :wallet 2000)
