module oracle
go 1.22
