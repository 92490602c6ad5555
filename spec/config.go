package spec

import "fmt"

// Bounds of one history. They keep [Contract] a small comparable value, so an
// explorer can hash it; a history that needs more is rejected with an error.
const (
	MaxWrites  = 32 // write commands per history (bit masks are uint32)
	MaxFlushes = 16 // flush commands per history
	MaxBlocks  = 8  // blocks of the device (block masks are uint8)
)

// Config is the device as the block layer sees it.
//
// Documentation/block/writeback_cache_control.rst: a device advertises a
// volatile write cache (queue flag QUEUE_FLAG_WC, sysfs write_cache "write
// back") and, separately, native support for Forced Unit Access
// (QUEUE_FLAG_FUA). Without a volatile cache the block layer strips
// REQ_PREFLUSH and REQ_FUA (blk-flush.c, blk_flush_policy) and every
// completed write is already on stable media.
type Config struct {
	VolatileCache bool // write_cache = "write back"
	NativeFUA     bool // the device honours REQ_FUA itself; ignored without a volatile cache
}

// EmulatesFUA reports whether the block layer turns a FUA write into
// write + post-flush: blk-flush.c, blk_flush_policy sets REQ_FSEQ_POSTFLUSH
// when the request has REQ_FUA but the queue lacks QUEUE_FLAG_FUA.
func (c Config) EmulatesFUA() bool { return c.VolatileCache && !c.NativeFUA }

func (c Config) String() string {
	switch {
	case !c.VolatileCache:
		return "no-cache"
	case c.NativeFUA:
		return "cache+fua"
	default:
		return "cache+emulated-fua"
	}
}

// The three device configurations that behave differently.
var (
	CacheFUA         = Config{VolatileCache: true, NativeFUA: true} // volatile cache, native FUA
	CacheEmulatedFUA = Config{VolatileCache: true}                  // volatile cache, FUA emulated by a post-flush
	NoCache          = Config{}                                     // write through: every completed write is durable
)

// Configs lists the three device configurations that behave differently.
func Configs() []Config {
	return []Config{
		{VolatileCache: true, NativeFUA: true},
		{VolatileCache: true, NativeFUA: false},
		{VolatileCache: false},
	}
}

// ParseConfig is the inverse of Config.String.
func ParseConfig(s string) (Config, error) {
	for _, c := range Configs() {
		if c.String() == s {
			return c, nil
		}
	}
	return Config{}, fmt.Errorf("unknown device config %q (want cache+fua, cache+emulated-fua or no-cache)", s)
}
