//go:build !cuda || !linux

package cupti

// Open reports that this build cannot load CUPTI: it is loaded only in a build with -tags
// cuda on Linux.
func Open() (*Library, error) {
	return nil, unavailable("this build has no CUPTI loader (it needs -tags cuda on Linux)")
}
