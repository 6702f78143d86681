package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/bloomkv/bloomkv/internal/splits"
	"github.com/bloomkv/bloomkv/sstable"
	"github.com/cockroachdb/pebble"
)

// The prefix-scan workload: users have the keys "user/<id>/<field>" of
// UserFields; both engines' comparers split them after the user
// (the built-in Split "user" of internal/splits, which kv's prefix tests
// use too), so filters hold users, and `bloomkv db --split user` reads a
// bench store with its filters. Present users have even ids, absent ones odd. The stores
// are loaded in scattered user order; then SeekPrefixGE("user/<id>/") for
// absent users and for present ones, followed by Next through their
// fields.

// UserFields are the fields every present user has.
var UserFields = []string{"email", "name", "plan"}

// userStride scatters the load order: i*userStride mod users visits every
// user once when users is not a multiple of it (a prime).
const userStride = 1_000_003

// Users returns the number of users that make about keys keys: at least
// one, and never a multiple of the stride that scatters their order.
func Users(keys int) int {
	users := max(1, keys/len(UserFields))
	if users%userStride == 0 {
		users++
	}
	return users
}

// UserPrefix appends the prefix of user id's keys to dst.
func UserPrefix(dst []byte, id int) []byte {
	return fmt.Appendf(dst, "user/%08d/", id)
}

// userSplit is the built-in Split "user": splits.User under its
// SplitName.
var userSplit = func() splits.Builtin {
	b, err := splits.Named("user")
	if err != nil {
		panic(err) // splits.All lists it
	}
	return b
}()

// KVUserComparer is bytewise order with the built-in Split "user"
// (splits.User, under its SplitName), for bloomkv.
var KVUserComparer *sstable.Comparer = userSplit.Comparer()

// PebbleUserComparer is bytewise order with splits.User, for Pebble.
var PebbleUserComparer = func() *pebble.Comparer {
	c := *pebble.DefaultComparer
	c.Split = splits.User
	return &c
}()

// LoadUsers writes every present user's fields into e, users in scattered
// order, in NoSync batches of about LoadBatch keys, values of valueSize
// bytes from gen; progress (may be nil) hears of the users written.
func LoadUsers(ctx context.Context, e Engine, users, valueSize int, gen KeyGen, progress func(n int)) error {
	var key, value []byte
	perBatch := max(1, LoadBatch/len(UserFields))
	for lo := 0; lo < users; lo += perBatch {
		if err := ctx.Err(); err != nil {
			return err
		}
		hi := min(lo+perBatch, users)
		err := e.Apply(func(set func(key, value []byte) error) error {
			for i := lo; i < hi; i++ {
				id := 2 * int(uint64(i)*userStride%uint64(users))
				for _, f := range UserFields {
					key = append(UserPrefix(key[:0], id), f...)
					if err := set(key, gen.Value(value[:0], id, valueSize)); err != nil {
						return err
					}
				}
			}
			return nil
		}, false)
		if err != nil {
			return err
		}
		if progress != nil {
			progress(hi - lo)
		}
	}
	return nil
}

// UserSeek seeks the prefix of one user, chosen by i among users in an
// order seed fixes, absent or present, and checks the keys it finds: none
// for an absent user, one per field for a present one.
func UserSeek(e Engine, buf []byte, users int, seed uint64, i int, present bool) ([]byte, error) {
	want, odd := 0, uint64(1)
	if present {
		want, odd = len(UserFields), 0
	}
	id := 2*(Mix64(seed^uint64(i)<<1|odd)%uint64(users)) + odd
	buf = UserPrefix(buf[:0], int(id))
	n, err := e.SeekPrefix(buf)
	if err != nil {
		return buf, err
	}
	if n != want {
		return buf, fmt.Errorf("prefix %s: %d keys, want %d", buf, n, want)
	}
	return buf, nil
}

// UserSeeks runs seeks seeks of absent or present users on e and
// returns the time they took; progress (may be nil) hears of every
// ProgressEvery.
func UserSeeks(ctx context.Context, e Engine, users, seeks int, seed uint64, present bool, progress func(n int)) (time.Duration, error) {
	var buf []byte
	var err error
	start := time.Now()
	for i := range seeks {
		if i%ProgressEvery == 0 && i > 0 {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			if progress != nil {
				progress(ProgressEvery)
			}
		}
		if buf, err = UserSeek(e, buf, users, seed, i, present); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}
