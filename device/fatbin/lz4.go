package fatbin

import "fmt"

// decodeLZ4 decompresses an LZ4 block (the LZ4 block format: sequences of
// a token, literals and a match copied from up to 65535 bytes back) into
// exactly size bytes. Every length and offset is checked: a block that
// reads past its end, refers before its start or makes more or fewer
// bytes than size is an error.
func decodeLZ4(src []byte, size int) ([]byte, error) {
	out := make([]byte, 0, size)
	i := 0
	length := func(n int) (int, error) {
		if n != 15 {
			return n, nil
		}
		for {
			if i >= len(src) {
				return 0, fmt.Errorf("lz4: a length runs past the block")
			}
			b := src[i]
			i++
			n += int(b)
			if n > size {
				return 0, fmt.Errorf("lz4: a length of %d past the %d bytes expected", n, size)
			}
			if b != 255 {
				return n, nil
			}
		}
	}
	for i < len(src) {
		tok := src[i]
		i++
		lit, err := length(int(tok >> 4))
		if err != nil {
			return nil, err
		}
		if lit > len(src)-i || lit > size-len(out) {
			return nil, fmt.Errorf("lz4: %d literals at %d: past the block or the output", lit, i)
		}
		out = append(out, src[i:i+lit]...)
		i += lit
		if i == len(src) {
			break // the last sequence has literals only
		}
		if len(src)-i < 2 {
			return nil, fmt.Errorf("lz4: a match offset cut off at %d", i)
		}
		off := int(src[i]) | int(src[i+1])<<8
		i += 2
		m, err := length(int(tok & 15))
		if err != nil {
			return nil, err
		}
		m += 4
		if off == 0 || off > len(out) {
			return nil, fmt.Errorf("lz4: a match %d bytes back at output %d", off, len(out))
		}
		if m > size-len(out) {
			return nil, fmt.Errorf("lz4: a match of %d bytes past the %d expected", m, size)
		}
		from := len(out) - off
		for k := range m { // overlapping copies repeat the bytes just written
			out = append(out, out[from+k])
		}
	}
	if len(out) != size {
		return nil, fmt.Errorf("lz4: %d bytes, the entry says %d", len(out), size)
	}
	return out, nil
}
