package keyforge

// Version is this SDK's version (semantic versioning), sent as part of the User-Agent header.
const Version = "0.1.0"
