"""`warmstart study`: pretrained vs scratch twin vs TF-IDF over label fractions and seeds."""
