module github.com/keyforge/keyforge/sdks/go

go 1.19
