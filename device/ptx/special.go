package ptx

// special is a special register.
type special uint8

const (
	spTidX special = iota
	spTidY
	spTidZ
	spNtidX
	spNtidY
	spNtidZ
	spCtaidX
	spCtaidY
	spCtaidZ
	spNctaidX
	spNctaidY
	spNctaidZ
	spLaneid
	spWarpid
	spNwarpid
	spSmid
	spNsmid
	spGridid
	spLanemaskEq
	spLanemaskLt
	spLanemaskLe
	spLanemaskGt
	spLanemaskGe
	spDynSmem
	spTotalSmem
	spClock
	spClock64
	spGlobalTimer
	spGlobalTimerLo
	spGlobalTimerHi
)

var specialNames = map[string]special{
	"%tid.x": spTidX, "%tid.y": spTidY, "%tid.z": spTidZ,
	"%ntid.x": spNtidX, "%ntid.y": spNtidY, "%ntid.z": spNtidZ,
	"%ctaid.x": spCtaidX, "%ctaid.y": spCtaidY, "%ctaid.z": spCtaidZ,
	"%nctaid.x": spNctaidX, "%nctaid.y": spNctaidY, "%nctaid.z": spNctaidZ,
	"%laneid": spLaneid, "%warpid": spWarpid, "%nwarpid": spNwarpid,
	"%smid": spSmid, "%nsmid": spNsmid, "%gridid": spGridid,
	"%lanemask_eq": spLanemaskEq, "%lanemask_lt": spLanemaskLt, "%lanemask_le": spLanemaskLe,
	"%lanemask_gt": spLanemaskGt, "%lanemask_ge": spLanemaskGe,
	"%dynamic_smem_size": spDynSmem, "%total_smem_size": spTotalSmem,
	"%clock": spClock, "%clock64": spClock64, "%globaltimer": spGlobalTimer,
	"%globaltimer_lo": spGlobalTimerLo, "%globaltimer_hi": spGlobalTimerHi,
}
