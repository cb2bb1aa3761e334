package repo

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"sync"

	"github.com/redis/rueidis"

	"github.com/hashgate/hashgate/internal/store"
)

// scriptSHAs maps each script LoadScript made to its body's SHA-1, for RunScripts' EVALSHA.
var scriptSHAs sync.Map // *rueidis.Lua → string

func rememberSHA(l *rueidis.Lua, body string) {
	sum := sha1.Sum([]byte(body))
	scriptSHAs.Store(l, hex.EncodeToString(sum[:]))
}

// RunScripts runs l once per call in one pipeline (one round trip per node; in a cluster each
// call goes to its keys' slot) and decodes each reply as RunScript does, errs[i] being call
// i's failure. A call answered NOSCRIPT (a server restarted since the scripts were loaded) runs
// again alone, with Exec, which loads the script. l must come from LoadScript.
func RunScripts(ctx context.Context, c rueidis.Client, m *Metrics, name, op string, l *rueidis.Lua, calls []rueidis.LuaExec) ([]Reply, []error) {
	reps, errs := make([]Reply, len(calls)), make([]error, len(calls))
	if len(calls) == 0 {
		return reps, errs
	}
	sha, ok := scriptSHAs.Load(l)
	if !ok {
		panic("repo: RunScripts of a script LoadScript did not make")
	}
	cmds := make(rueidis.Commands, len(calls))
	for i, x := range calls {
		cmds[i] = c.B().Evalsha().Sha1(sha.(string)).Numkeys(int64(len(x.Keys))).Key(x.Keys...).Arg(x.Args...).Build()
	}
	for i, res := range c.DoMulti(ctx, cmds...) {
		if re, ok := rueidis.IsRedisErr(res.Error()); ok && re.IsNoScript() {
			res = l.Exec(ctx, c, calls[i].Keys, calls[i].Args)
		}
		rep, err := decodeScript(name, res)
		if err != nil {
			m.ScriptError(ctx, name)
			if !errors.Is(err, ErrReply) {
				err = CommandError(op, err)
			}
		}
		reps[i], errs[i] = rep, err
	}
	return reps, errs
}

// execConfirmed runs l on c, the client a store.Durable.Run write was handed, in one round
// trip with the write's confirmation (store.ConfirmWith), and returns its result and the
// confirmation's error; no result when the replicas were known missing before anything was
// sent. A server that does not know the script yet (NOSCRIPT: nothing ran) gets it through
// Exec, and Run confirms that call. l must come from LoadScript.
func execConfirmed(ctx context.Context, c rueidis.Client, l *rueidis.Lua, keys, args []string) (*rueidis.RedisResult, error) {
	sha, ok := scriptSHAs.Load(l)
	if !ok {
		panic("repo: execConfirmed of a script LoadScript did not make")
	}
	res, err := store.ConfirmWith(ctx, c, c.B().Evalsha().Sha1(sha.(string)).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build())
	if len(res) == 0 {
		return nil, err
	}
	if re, ok := rueidis.IsRedisErr(res[0].Error()); ok && re.IsNoScript() {
		r := l.Exec(ctx, c, keys, args)
		return &r, nil
	}
	return &res[0], err
}
