(slugify "Hello World")
