package protocol

// DeviceTiming is what `hapticd device-standin` prints: a host loop's
// period as the arm saw it, from the arrival time of every force frame. Load
// generators set the service's figures beside a bare host loop's.
type DeviceTiming struct {
	Frames      uint64  `json:"frames"`
	TargetUs    float64 `json:"target_us"`
	PeriodUsP50 float64 `json:"period_us_p50"`
	PeriodUsP99 float64 `json:"period_us_p99"`
	PeriodUsMax float64 `json:"period_us_max"`
	// Late counts periods over 1.5 × target: ticks on which the arm got no
	// fresh command when it should have.
	Late uint64 `json:"late"`
}
