module github.com/hetsgd/hetsgd

go 1.26
