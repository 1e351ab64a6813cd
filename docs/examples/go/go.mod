module example.com/keyforge-license

go 1.19
