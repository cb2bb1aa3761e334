package session

// Expiry is the sliding-expiry rule. A session lives until the earlier of its absolute deadline
// and the end of its idle window (last seen + idle timeout). The window slides (a refresh) only
// when less than RefreshFraction of it is left and sliding would move it: never past the
// absolute deadline. session_authorize.lua applies the same rule on Redis's clock when it
// slides the window; the store applies it, with Judge, to a copy read from the client-side
// cache, so even a stale copy never extends a session.
type Expiry struct {
	// RefreshFraction is within (0, 1) (GATEWAY_SESSION_REFRESH_FRACTION).
	RefreshFraction float64
}

// Verdict is what Judge decides for a session at a given time.
type Verdict int

const (
	// Live: serve it as it is.
	Live Verdict = iota
	// RefreshDue: serve it, and slide its idle window.
	RefreshDue
	// Expired: past a deadline; refuse it as missing.
	Expired
)

// Judge applies the rule at now to a session last seen at lastSeen with the given idle
// timeout and absolute deadline (all Unix milliseconds; the timeout in milliseconds), and
// returns the end of its idle window (never past the absolute deadline).
func (e Expiry) Judge(now, lastSeen, idle, absolute int64) (idleEnd int64, v Verdict) {
	end := min(lastSeen+idle, absolute)
	return end, e.JudgeEnd(now, end, idle, absolute)
}

// JudgeEnd is Judge for a session whose current end is already known (the key's expiry, read
// with its PTTL, is the end of its idle window, never past the absolute deadline). absolute
// is 0 when not known: the window is then taken to be able to slide, and the refresh that
// follows finds out on Redis's clock (session_authorize.lua, which answers the deadline).
func (e Expiry) JudgeEnd(now, end, idle, absolute int64) Verdict {
	left := end - now
	room := idle
	if absolute > 0 {
		room = min(idle, absolute-now)
	}
	switch {
	case left <= 0:
		return Expired
	case float64(left) < float64(idle)*e.RefreshFraction && room > left:
		return RefreshDue
	}
	return Live
}
