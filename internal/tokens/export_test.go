package tokens

import "time"

// CacheTTL is the check's cache TTL s uses (Options.CacheTTL capped at MaxCacheTTL).
func CacheTTL(s *Service) time.Duration { return s.cacheTTL }
