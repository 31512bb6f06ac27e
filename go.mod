module github.com/hetsgd/hetsgd

go 1.26

require golang.org/x/sys v0.38.0
