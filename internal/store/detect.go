package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/rueidis"
)

// detect reads the server version and probes hash field expiration on a short-lived key:
// HSETEX (Redis 8) → HSET+HEXPIRE (Redis 7.4) → the separate-key fallback.
func (s *Store) detect(ctx context.Context, o Options, opt rueidis.ClientOption) error {
	c := s.Client
	if s.Caps.Embedded {
		s.Caps.ServerVersion = "embedded (miniredis)"
		if err := c.Do(ctx, c.B().Ping().Build()).Error(); err != nil {
			return fmt.Errorf("store: ping embedded store: %w", Classify(err))
		}
	} else {
		info, err := s.askAny(ctx, func(n rueidis.Client) rueidis.Completed { return n.B().Info().Section("server").Build() }).ToString()
		if err != nil {
			return fmt.Errorf("store: read server info: %w", Classify(err))
		}
		s.Caps.ServerVersion = infoField(info, "redis_version")
		if err := s.detectDurability(ctx, opt); err != nil {
			return err
		}
	}
	if o.ForceFieldExpiry != "" {
		s.Caps.FieldExpiry = o.ForceFieldExpiry
		s.Caps.FieldExpiryMs = o.ForceFieldExpiry != FieldExpiryFallback
		return nil
	}
	if err := s.detectFieldExpiry(ctx, c, o); err != nil || s.Caps.FieldExpiry == FieldExpiryFallback {
		return err
	}
	// HPEXPIRE on a missing key answers an empty reply where it exists and an error where not.
	key := o.ProbePrefix + ":v1:probe:{probe}"
	err := c.Do(ctx, c.B().Arbitrary("HPEXPIRE").Keys(key).Args("5000", "FIELDS", "1", "f").Build()).Error()
	switch {
	case err == nil || rueidis.IsRedisNil(err) || noReplicas(err):
		s.Caps.FieldExpiryMs = true
	case !isUnknownCommand(err):
		return fmt.Errorf("store: probe HPEXPIRE: %w", Classify(err))
	}
	return nil
}

// detectFieldExpiry sets Caps.FieldExpiry from what the server answers.
func (s *Store) detectFieldExpiry(ctx context.Context, c rueidis.Client, o Options) error {
	key := o.ProbePrefix + ":v1:probe:{probe}"
	err := c.Do(ctx, c.B().Arbitrary("HSETEX").Keys(key).Args("PX", "5000", "FIELDS", "1", "f", "1").Build()).Error()
	if err == nil {
		// HSETEX gave the field a TTL, not the key: delete the probe at once so no key is ever
		// left without a key-level TTL (were this DEL lost, the field's expiry still removes it).
		if err := c.Do(ctx, c.B().Del().Key(key).Build()).Error(); err != nil {
			return fmt.Errorf("store: remove probe key: %w", Classify(err))
		}
		s.Caps.FieldExpiry = FieldExpiryHSETEX
		return nil
	}
	if noReplicas(err) {
		s.Caps.FieldExpiry = FieldExpiryHSETEX // refused as a write: the command exists
		return nil
	}
	if !isUnknownCommand(err) {
		return fmt.Errorf("store: probe HSETEX: %w", Classify(err))
	}
	// HEXPIRE on a missing key answers an empty reply where it exists and an error where not.
	err = c.Do(ctx, c.B().Arbitrary("HEXPIRE").Keys(key).Args("5", "FIELDS", "1", "f").Build()).Error()
	switch {
	case err == nil || rueidis.IsRedisNil(err) || noReplicas(err):
		s.Caps.FieldExpiry = FieldExpiryHEXPIRE
	case isUnknownCommand(err):
		s.Caps.FieldExpiry = FieldExpiryFallback
	default:
		return fmt.Errorf("store: probe HEXPIRE: %w", Classify(err))
	}
	return nil
}

// noReplicas reports Redis's refusal of a write for want of replicas (min-replicas-to-write):
// the command exists, as Redis refuses an unknown one before it looks at the replicas.
func noReplicas(err error) bool {
	e, ok := rueidis.IsRedisErr(err)
	return ok && strings.HasPrefix(e.Error(), "NOREPLICAS")
}

func isUnknownCommand(err error) bool {
	if e, ok := rueidis.IsRedisErr(err); ok {
		msg := strings.ToLower(e.Error())
		return strings.Contains(msg, "unknown command") || strings.Contains(msg, "unknown subcommand")
	}
	return false
}

func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}

// detectDurability prepares Durable: WAITAOF exists from Redis 7.2; append-only is on when any
// primary reports aof_enabled; in auto mode the gateway's Redis user must be allowed ROLE (it
// tells, with each durable write, whether the primary has a replica online), and the topology
// tells whether the deployment has replicas (detectReplicas).
func (s *Store) detectDurability(ctx context.Context, opt rueidis.ClientOption) error {
	d := s.Durable
	if d.off {
		return nil
	}
	d.waitAOF.Store(versionAtLeast(s.Caps.ServerVersion, 7, 2))
	// The nodes of one deployment share their persistence settings: those that answer speak for
	// one that is down.
	err := s.eachReachable(func(addr string, n rueidis.Client) error {
		c, cancel := context.WithTimeout(ctx, s.Timeout)
		defer cancel()
		info, err := n.Do(c, n.B().Info().Section("persistence").Build()).ToString()
		if err != nil {
			return fmt.Errorf("store: read persistence info of %s: %w", addr, Classify(err))
		}
		if infoField(info, "aof_enabled") == "1" {
			d.aof.Store(true)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if d.replicas == DurableAuto {
		err := s.askAny(ctx, func(n rueidis.Client) rueidis.Completed { return n.B().Role().Build() }).Error()
		if e, ok := rueidis.IsRedisErr(err); ok && strings.HasPrefix(e.Error(), "NOPERM") {
			return fmt.Errorf("store: GATEWAY_DURABLE_REPLICAS=auto asks ROLE with every revocation, which this Redis user may not run: allow it (+role) or set GATEWAY_DURABLE_REPLICAS to a replica count or 0")
		}
		if err != nil {
			return fmt.Errorf("store: ROLE: %w", Classify(err))
		}
		s.detectReplicas(ctx, opt)
	}
	return nil
}

// versionAtLeast compares a "major.minor.patch" server version.
func versionAtLeast(v string, major, minor int) bool {
	var ma, mi int
	if _, err := fmt.Sscanf(v, "%d.%d", &ma, &mi); err != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}
