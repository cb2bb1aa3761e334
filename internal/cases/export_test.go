package cases

// SetBatch sets how many due cases one tenant query returns (tests use small batches).
func SetBatch(s *Sweeper, n int) { s.batch = n }
