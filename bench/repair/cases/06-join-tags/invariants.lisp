(string= (join-tags '("news")) "news")
(string= (post-header (first *posts*)) "Hello [news]")
