module example.com/workerpick-cgo

go 1.19
