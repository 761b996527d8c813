module example.com/bare

go 1.22
