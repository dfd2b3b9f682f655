package impl

// OpenTestRedis is testRedis for the tests of package impl_test.
var OpenTestRedis = testRedis
