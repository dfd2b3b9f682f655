package crm

//go:generate go run ../../../tools/sdkgen -root ../../..
