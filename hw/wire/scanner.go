package wire

// scanBufLen holds many frames: a driver reads at most a few per tick, and
// the buffer compacts before it fills.
const scanBufLen = 1024

// Scanner finds frames in a byte stream that may hold noise, partial frames
// and bytes from before a resynchronisation. Feed it with Space and Fill (to
// read straight into it without a copy) or Write, then take frames with Next
// or NextOf. The zero value is not usable; use NewScanner.
type Scanner struct {
	dir     Direction
	layout  Layout
	r, w    int
	skipped uint64
	buf     [scanBufLen]byte
}

// NewScanner returns a Scanner for frames sent in direction dir.
func NewScanner(dir Direction) *Scanner { return &Scanner{dir: dir} }

// NewScannerIn returns a Scanner for frames sent in direction dir by a
// device that speaks layout l (a wired grip: LayoutWired).
func NewScannerIn(l Layout, dir Direction) *Scanner { return &Scanner{dir: dir, layout: l} }

// Space returns the free tail of the buffer to read into; pass the number of
// bytes read to Fill. It compacts the buffer first, and when the buffer is
// full of bytes that hold no frame it drops the oldest half (counted as
// skipped), so it always returns at least one byte.
func (s *Scanner) Space() []byte {
	if s.r > 0 && s.w > len(s.buf)-MaxFrameLen {
		s.w = copy(s.buf[:], s.buf[s.r:s.w])
		s.r = 0
	}
	if s.w == len(s.buf) {
		drop := len(s.buf) / 2
		s.skipped += uint64(drop)
		s.w = copy(s.buf[:], s.buf[drop:])
	}
	return s.buf[s.w:]
}

// Fill records that n bytes were read into the slice Space returned.
func (s *Scanner) Fill(n int) { s.w += n }

// Write copies p into the scanner. It never fails; when p is larger than
// the free space, the oldest bytes are dropped and counted as skipped.
func (s *Scanner) Write(p []byte) (int, error) {
	total := len(p)
	for len(p) > 0 {
		n := copy(s.Space(), p)
		s.Fill(n)
		p = p[n:]
	}
	return total, nil
}

// Unscanned returns the bytes that wait to be scanned, valid until the
// next call that feeds the scanner or takes a frame.
func (s *Scanner) Unscanned() []byte { return s.buf[s.r:s.w] }

// Buffered returns how many bytes wait to be scanned.
func (s *Scanner) Buffered() int { return s.w - s.r }

// Skipped returns how many bytes were dropped so far because they did not
// start a plausible frame.
func (s *Scanner) Skipped() uint64 { return s.skipped }

// Reset drops every buffered byte without counting it as skipped (after
// flushing the port's input, say).
func (s *Scanner) Reset() { s.r, s.w = 0, 0 }

// Next decodes the next frame of any known header into m and returns its
// bytes, which stay valid until the next call that feeds the scanner. It
// drops bytes that do not start a plausible frame. It returns ok false
// when the buffer holds no complete frame yet.
func (s *Scanner) Next(m *Message) (frame []byte, ok bool) {
	return s.next(m, false, 0)
}

// NextOf is Next for a lock-step reader that expects one header: any other
// byte, including the header of another valid frame, is dropped as noise.
func (s *Scanner) NextOf(header byte, m *Message) (frame []byte, ok bool) {
	return s.next(m, true, header)
}

func (s *Scanner) next(m *Message, only bool, want byte) ([]byte, bool) {
	for s.r < s.w {
		h := s.buf[s.r]
		f := lookup(s.layout, s.dir, h)
		if f == nil || f.Positional || (only && h != want) {
			s.r++
			s.skipped++
			continue
		}
		b := s.buf[s.r:s.w]
		n, err := f.frameLen(b)
		if err == ErrShort {
			return nil, false
		}
		if err == nil {
			m.Header = h
			err = f.decode(b[:n], m)
		}
		if err != nil {
			s.r++
			s.skipped++
			continue
		}
		s.r += n
		return b[:n], true
	}
	// Everything was consumed: start over at the front so Space never
	// needs to copy.
	s.r, s.w = 0, 0
	return nil, false
}
