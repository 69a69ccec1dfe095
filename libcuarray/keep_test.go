//go:build cgo

package main

import (
	"encoding/json"
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/interop"
)

// keepDevice opens the test device and returns its handle and ledger.
func keepDevice(t *testing.T) (uint64, *accounting.Ledger) {
	t.Helper()
	h, err := openDevice(testSpec())
	require.NoError(t, err)
	d, err := deviceOf(h)
	require.NoError(t, err)
	return h, d.Ledger()
}

// randomArray allocates a float32 array of random shape (1 to 3 axes of 1
// to 9) filled with fresh random numbers, and returns it with its byte size.
func randomArray(t *testing.T, dev uint64) (uint64, int64) {
	t.Helper()
	shape := make([]int, 1+rand.IntN(3))
	n := 1
	for i := range shape {
		shape[i] = 1 + rand.IntN(9)
		n *= shape[i]
	}
	h, err := empty(dev, "float32", shape, false)
	require.NoError(t, err)
	data := make([]float32, n)
	for i := range data {
		data[i] = 1 + rand.Float32()
	}
	require.NoError(t, copyHost(h, unsafe.Pointer(&data[0]), int64(4*n), true))
	return h, int64(4 * n)
}

func viewOf(t *testing.T, h uint64, o viewOp) uint64 {
	t.Helper()
	op, err := json.Marshal(o)
	require.NoError(t, err)
	v, err := view(h, op)
	require.NoError(t, err)
	return v
}

// A DLPack tensor built in C (keep.c) says what interop's export says of
// the same array: pointer, shape, element strides, dtype, device,
// read-only; its deleter is keep.c's, and the keep counts it until it is
// deleted. The legacy ABI refuses a read-only array.
func TestKeepExportLayout(t *testing.T) {
	dev, _ := keepDevice(t)
	base, _ := randomArray(t, dev)
	defer releaseArray(base)
	e, err := arrayOf(base)
	require.NoError(t, err)
	nd, rows := e.arr.NDim(), e.arr.Shape()[0]
	views := map[string]uint64{
		"whole":     base,
		"reversed":  viewOf(t, base, viewOp{Op: "flip", Axis: rand.IntN(nd)}),
		"transpose": viewOf(t, base, viewOp{Op: "transpose"}),
		"stepped":   viewOf(t, base, viewOp{Op: "slice", Axis: 0, Start: 0, Stop: rows, Step: 2}),
		"read-only": viewOf(t, base, viewOp{Op: "readonly"}),
	}
	for name, h := range views {
		for _, versioned := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/versioned=%v", name, versioned), func(t *testing.T) {
				d, err := describe(h)
				require.NoError(t, err)
				before := keepTensors(d.keep)
				got, err := toDLPack(h, versioned, false, consumerHost)
				readonly := d.flags&descReadOnly != 0
				if readonly && !versioned {
					require.ErrorIs(t, err, interop.ErrInterface, "the legacy ABI cannot say read-only")
					assert.Equal(t, before, keepTensors(d.keep), "a refused export counts nothing")
					return
				}
				require.NoError(t, err)
				assert.True(t, keepOwns(got, versioned), "the tensor's deleter is keep.c's")
				assert.Equal(t, before+1, keepTensors(d.keep), "the keep counts the tensor")

				a, err := arrayOf(h)
				require.NoError(t, err)
				var want unsafe.Pointer
				if versioned {
					want, err = interop.ExportDLPack(a.arr)
				} else {
					want, err = interop.ExportDLPackLegacy(a.arr)
				}
				require.NoError(t, err)
				gotArr, err := importTensor(got, versioned)
				require.NoError(t, err)
				wantArr, err := importTensor(want, versioned)
				require.NoError(t, err)
				gd, err := gotArr.Descriptor()
				require.NoError(t, err)
				wd, err := wantArr.Descriptor()
				require.NoError(t, err)
				assert.Equal(t, wd, gd, "the C-built tensor describes the array as interop's export does")
				assert.Equal(t, readonly, gotArr.ReadOnly())
				require.NoError(t, gotArr.Free(), "the import's Free calls the tensor's deleter")
				require.NoError(t, wantArr.Free())
				assert.Equal(t, before, keepTensors(d.keep), "the deleter counted the tensor out")
			})
		}
	}
	for name, h := range views {
		if h != base {
			require.NoError(t, releaseArray(h), name)
		}
	}
}

// importTensor borrows a DLPack tensor as a descriptor of its own device.
func importTensor(p unsafe.Pointer, versioned bool) (*devarray.DevArray, error) {
	if versioned {
		return interop.ImportDLPack(nil, p)
	}
	return interop.ImportDLPackLegacy(nil, p)
}

// An array freed while DLPack tensors of it (or of its views) are alive
// keeps its memory, counted in the ledger, until the last tensor is
// deleted; then the next call that counts memory lets it go. Exports
// after the free are refused, by the handle's view and by a description
// kept from before, even once the keep serves another array.
func TestKeepHoldsFreedMemory(t *testing.T) {
	dev, led := keepDevice(t)
	for _, through := range []string{"array", "view"} {
		t.Run(through, func(t *testing.T) {
			require.NoError(t, reapKeeps())
			start := led.Current(accounting.Device)
			base, nbytes := randomArray(t, dev)
			allocated := led.Current(accounting.Device) // the allocator's rounding included
			require.GreaterOrEqual(t, allocated-start, nbytes, "the array is counted")
			h := base
			if through == "view" {
				h = viewOf(t, base, viewOp{Op: "transpose"})
				defer releaseArray(h)
			}
			stale, err := describe(h)
			require.NoError(t, err)
			n := 1 + rand.IntN(8)
			tensors := make([]unsafe.Pointer, n)
			for i := range tensors {
				tensors[i], err = toDLPack(h, true, false, consumerNoSync)
				require.NoError(t, err)
			}
			require.Equal(t, n, keepTensors(stale.keep))

			require.NoError(t, releaseArray(base))
			assert.Equal(t, allocated, led.Current(accounting.Device), "%d live tensors keep the %d bytes", n, nbytes)
			_, err = keepExport(stale, true)
			assert.ErrorIs(t, err, devarray.ErrFreed, "a description from before the free exports nothing")
			if through == "view" {
				_, err = toDLPack(h, true, false, consumerNoSync)
				assert.ErrorIs(t, err, devarray.ErrFreed, "the view of a freed array exports nothing")
			}
			for _, p := range tensors[:n-1] {
				deleteDLPack(p)
			}
			require.NoError(t, reapKeeps())
			assert.Equal(t, allocated, led.Current(accounting.Device), "the last tensor still keeps the memory")
			deleteDLPack(tensors[n-1])
			assert.Equal(t, 0, keepTensors(stale.keep))
			_, err = ledgerJSON(dev)
			require.NoError(t, err)
			assert.Equal(t, start, led.Current(accounting.Device), "the ledger call let the memory go")

			// The keep goes back to the pool; an array that gets it
			// exports, the stale description still does not.
			again, _ := randomArray(t, dev)
			defer releaseArray(again)
			fresh, err := describe(again)
			require.NoError(t, err)
			p, err := keepExport(fresh, true)
			require.NoError(t, err)
			deleteDLPack(p)
			_, err = keepExport(stale, true)
			assert.ErrorIs(t, err, devarray.ErrFreed, "a stale description, whoever has its keep now")
		})
	}
}

// Tensors made, deleted and arrays freed from many goroutines at once (as
// Python threads and consumers do): every tensor made of a live array is
// counted once, and once all are deleted and the arrays freed, the ledger
// is back where it started and no Hold is left.
func TestKeepConcurrent(t *testing.T) {
	dev, led := keepDevice(t)
	require.NoError(t, reapKeeps())
	start := led.Current(accounting.Device)
	const arrays = 16
	handles := make([]uint64, arrays)
	descs := make([]desc, arrays)
	for i := range handles {
		handles[i], _ = randomArray(t, dev)
		var err error
		descs[i], err = describe(handles[i])
		require.NoError(t, err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	made := 0
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(rand.Uint64(), uint64(g)))
			var held []unsafe.Pointer
			for range 400 {
				i := r.IntN(arrays)
				switch r.IntN(8) {
				case 0:
					_ = releaseArray(handles[i]) // once: the others get errHandle
				case 1, 2:
					if len(held) > 0 {
						k := r.IntN(len(held))
						deleteDLPack(held[k])
						held = append(held[:k], held[k+1:]...)
					}
				default:
					if p, err := keepExport(descs[i], true); err == nil {
						held = append(held, p)
						mu.Lock()
						made++
						mu.Unlock()
					} else if !assert.ErrorIs(t, err, devarray.ErrFreed) {
						return
					}
				}
			}
			for _, p := range held {
				deleteDLPack(p)
			}
		}()
	}
	wg.Wait()
	for _, h := range handles {
		_ = releaseArray(h)
	}
	require.NoError(t, reapKeeps())
	assert.Positive(t, made, "some tensors were made")
	for i := range descs {
		assert.Zero(t, keepTensors(descs[i].keep), "array %d: every tensor was deleted", i)
	}
	keeps.Lock()
	assert.Empty(t, keeps.held, "no Hold is left")
	keeps.Unlock()
	assert.Equal(t, start, led.Current(accounting.Device), "every array's memory went back")
}
