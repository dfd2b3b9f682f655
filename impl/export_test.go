package impl

// Redis clients for the tests of package impl_test: see testRedis and closedRedis.
var (
	OpenTestRedis   = testRedis
	OpenClosedRedis = closedRedis
)
