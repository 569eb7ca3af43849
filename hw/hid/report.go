package hid

import (
	"encoding/binary"
	"math"

	"github.com/hapticd/hapticd/hw"
)

// ReportLen is the size of every RawHID report, without a report ID.
const ReportLen = 64

// UsagePage and Usage identify a RawHID interface of this layout.
const (
	UsagePage = 0xFFAB
	Usage     = 0x0200
)

// Report types.
const (
	TypeForce       byte = 0x01
	TypeInfoRequest byte = 0x02
	TypeState       byte = 0x81
	TypeInfo        byte = 0x82
)

// Report is one 64-byte report.
type Report [ReportLen]byte

// Info is the identity in a TypeInfo report.
type Info struct {
	ID                                      uint16
	Model, HardwareVersion, FirmwareVersion uint8
	UUID                                    [16]byte
}

// StateReport is the content of a TypeState report.
type StateReport struct {
	PositionM, VelocityMps hw.Vec3
	Buttons                uint8
	Status                 uint8
}

func putF32(b []byte, v float64) { binary.LittleEndian.PutUint32(b, math.Float32bits(float32(v))) }
func getF32(b []byte) float64    { return float64(math.Float32frombits(binary.LittleEndian.Uint32(b))) }

func putVec(b []byte, v hw.Vec3) { putF32(b, v.X); putF32(b[4:], v.Y); putF32(b[8:], v.Z) }
func getVec(b []byte) hw.Vec3    { return hw.Vec3{X: getF32(b), Y: getF32(b[4:]), Z: getF32(b[8:])} }

// PutForce fills r with a force command.
func (r *Report) PutForce(seq uint8, forceN hw.Vec3) {
	*r = Report{}
	r[0], r[1] = TypeForce, seq
	putVec(r[2:], forceN)
}

// Force reads a force command's force.
func (r *Report) Force() hw.Vec3 { return getVec(r[2:]) }

// PutInfoRequest fills r with an info request.
func (r *Report) PutInfoRequest(seq uint8) {
	*r = Report{}
	r[0], r[1] = TypeInfoRequest, seq
}

// PutState fills r with a state reply.
func (r *Report) PutState(seq uint8, s *StateReport) {
	*r = Report{}
	r[0], r[1] = TypeState, seq
	putVec(r[2:], s.PositionM)
	putVec(r[14:], s.VelocityMps)
	r[26], r[27] = s.Buttons, s.Status
}

// State reads a state reply.
func (r *Report) State(s *StateReport) {
	s.PositionM, s.VelocityMps = getVec(r[2:]), getVec(r[14:])
	s.Buttons, s.Status = r[26], r[27]
}

// PutInfo fills r with an info reply.
func (r *Report) PutInfo(seq uint8, in *Info) {
	*r = Report{}
	r[0], r[1] = TypeInfo, seq
	binary.LittleEndian.PutUint16(r[2:], in.ID)
	r[4], r[5], r[6] = in.Model, in.HardwareVersion, in.FirmwareVersion
	copy(r[7:23], in.UUID[:])
}

// Info reads an info reply.
func (r *Report) Info(in *Info) {
	in.ID = binary.LittleEndian.Uint16(r[2:])
	in.Model, in.HardwareVersion, in.FirmwareVersion = r[4], r[5], r[6]
	copy(in.UUID[:], r[7:23])
}

// Type and Seq read the header of any report.
func (r *Report) Type() byte { return r[0] }
func (r *Report) Seq() uint8 { return r[1] }
