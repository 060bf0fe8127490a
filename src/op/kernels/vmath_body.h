/*
 * The algorithms of vmath.h, written once over a small vector vocabulary
 * and compiled once per path: vmath.c (scalar), vmath_avx2.c and
 * vmath_avx512.c each define the vocabulary below and then include this
 * file, which defines static functions only and the path's table
 * `vm_impl`.
 *
 * Vocabulary (all static inline in the including file):
 *   VM_W                    lanes per vector
 *   vf, vi, vm              float lanes, int32 lanes, lane mask
 *   vf_set(f), vi_set(i)    broadcast
 *   vf_load(p), vf_store(p, v)   VM_W unaligned floats
 *   vf_add, vf_sub, vf_mul, vf_div   IEEE, rounded to nearest
 *   vf_fma(a, b, c)         a*b + c rounded once
 *   vf_fnma(a, b, c)        c - a*b rounded once
 *   vf_fms(a, b, c), vf_fnms(a, b, c)   a*b - c and -(a*b) - c, rounded
 *                           once
 *   vf_max(a, b), vf_min(a, b)   a > b ? a : b and a < b ? a : b (so a
 *                           NaN in b comes out, as x86 maxps does)
 *   vf_abs, vf_neg, vf_copysign(mag, sign)   sign-bit operations
 *   vf_lt, vf_gt, vf_ge, vf_eq   quiet ordered compares (false on NaN)
 *   vf_signbit(a)           the lanes whose sign bit is set (-0 and
 *                           negative NaNs too), as a mask for vf_sel only
 *   vf_sel(m, a, b)         m ? a : b per lane
 *   vm_any(m)               nonzero when some lane of a compare's mask
 *                           is set
 *   vf_bits, vi_as_f        reinterpretation
 *   vi_add, vi_sub, vi_max, vi_sll23, and vi_sra1 (arithmetic >> 1, only
 *   without VM_HAVE_SCALE)  int32 lane arithmetic (two's complement wrap)
 *   vf_lookup32(t, i)       t[i mod 32] per lane (the low five bits of i)
 *   VM_INLINE, VM_NAME      the forced-inline keyword, the path's name
 *   VM_HAVE_SCALE           with vf_scale(y, n) and vf_scalef(y, e): y *
 *                           2^n rounded once, n as int32 or as an integral
 *                           float (AVX-512's vscalefps); optional
 *
 * Only operations that IEEE 754 defines exactly appear, so every path
 * gives the same bits (for NaN results: some NaN). Rounding to an integer uses
 * the 1.5*2**23 trick (x + 0x1.8p23 - 0x1.8p23 is x rounded to nearest even for
 * |x| < 2**22), which also leaves the integer in the low bits of the sum.
 *
 * The coefficients come from tools/vmath_fit.py: weighted least-squares
 * fits on Chebyshev nodes against the functions in double, weighted so
 * that the error is relative to the final result, with the coefficients
 * rounded to float one at a time and the others refitted after each
 * rounding. The error of each fit (with float coefficients) is given in
 * units of 2**-24 relative.
 */

/* ---------------------------------------------------------- constants */

#define VM_MAGIC 0x1.8p23f
#define VM_LOG2E 1.44269502f
#define VM_LN2_HI 0x1.62e43p-1f      /* ln 2 rounded to float */
#define VM_LN2_LO -1.90465421e-09f   /* ln 2 - VM_LN2_HI */
#define VM_INV_SQRT_2PI 0.398942280f /* 1/sqrt(2 pi) */
#define VM_SQRT2 1.41421354f

/* e^r = 1 + r + r^2 P(r) on |r| <= 0.3467; 0.0021 x 2^-24. */
static const float vm_exp_p[6] = {0.5f,           0.166666642f,
                                  0.0416664593f,  0.00833389536f,
                                  0.00139354216f, 0.00019570296f};

/* log(1+f) = f - f^2/2 + f^3 Q(f) on [sqrt(2)/2 - 1, sqrt(2) - 1];
 * 0.0149 x 2^-24. */
static const float vm_log1p_q[9] = {0.333333105f, -0.250000149f, 0.200022399f,
                                    -0.16667752f, 0.142171264f,  -0.124086805f,
                                    0.119084269f, -0.116650186f, 0.0668957382f};

/*
 * gelu (see vm_gelu). Near: |x| <= 8 is cut into 32 intervals, uniform in
 * a (a + 2) for a = |x|: interval j holds the a with round(s a (a + 2)) =
 * j, s = VM_GELU_S (so each is about 1.2 / a wide at large a, where the
 * functions fall like e^(-a^2/2), and 0.5 wide at 0). On each, K(a) =
 * a Q(a) (Q(a) = erfc(a/sqrt 2)/2) and D(a) = Q(a) - a phi(a) (phi the
 * normal density) are degree-7 polynomials in u = a - c, c a point near
 * the middle where the function is within 0.002 x 2^-24 of a float (the
 * constant term), or c = 0 for K on [0, 0.51), whose constant term is
 * K(0) = 0. Errors: K 0.1449 x 2^-24 relative, D 0.2638 x 2^-24 relative to
 * max(|D|, Q) (D has a zero at a = 0.7518). Entries 32 k to 32 k + 31
 * hold the u^k coefficients of the intervals.
 */
#define VM_GELU_NEAR 8.0f
#define VM_GELU_FAR 15.0f
#define VM_GELU_S 0.393624991f
#define VM_GELU_SB 0.787249982f /* VM_GELU_S * 2 */
static const float vm_gelu_kc[32] = {
    0.0f,        0.864111185f, 1.47506523f, 1.96425986f, 2.31396627f,
    2.70288157f, 3.03536654f,  3.3373394f,  3.6336472f,  3.89545822f,
    4.12182474f, 4.39074469f,  4.61037922f, 4.83766174f, 5.03496361f,
    5.24002361f, 5.44821453f,  5.63594484f, 5.83909941f, 6.02186489f,
    6.20152521f, 6.37191534f,  6.54997444f, 6.70488691f, 6.87238073f,
    7.03010607f, 7.18753767f,  7.34932232f, 7.4885788f,  7.65345812f,
    7.78347921f, 7.94135904f};
static const float vm_gelu_k[8 * 32] = {
    /* u^0 */
    0.0f, 0.167433128f, 0.10339839f, 0.048615396f, 0.0239143465f,
    0.00928997062f, 0.0036461358f, 0.00141143741f, 0.000507698453f,
    0.000190903273f, 7.74662185e-05f, 2.47996104e-05f, 9.26536632e-06f,
    3.17775039e-06f, 1.20320431e-06f, 4.2065875e-07f, 1.38597045e-07f,
    4.90612102e-08f, 1.53228914e-08f, 5.19141352e-09f, 1.7339018e-09f,
    5.94760741e-10f, 1.88465465e-10f, 6.75726558e-11f, 2.16958188e-11f,
    7.25424668e-12f, 2.37081665e-12f, 7.32044959e-13f, 2.60690097e-13f,
    7.48681851e-14f, 2.74588498e-14f, 7.94048072e-15f,
    /* u^1 */
    0.5f, -0.0435588285f, -0.128168628f, -0.0890877321f, -0.0531347357f,
    -0.0245110821f, -0.0108893299f, -0.00465586921f, -0.00182894745f,
    -0.000738668663f, -0.000317554543f, -0.000108414897f, -4.25613434e-05f,
    -1.53259989e-05f, -6.04215484e-06f, -2.19926346e-06f, -7.53626011e-07f,
    -2.76028828e-07f, -8.9336659e-08f, -3.12199298e-08f, -1.07398925e-08f,
    -3.78564913e-09f, -1.23323673e-09f, -4.52661714e-10f, -1.48980536e-10f,
    -5.09600591e-11f, -1.70286493e-11f, -5.37664748e-12f, -1.95105499e-12f,
    -5.72691905e-13f, -2.13617522e-13f, -6.30287516e-14f,
    /* u^2 */
    -0.398942441f, -0.172106996f, 0.011815941f, 0.0538489297f, 0.0460042804f,
    0.027430132f, 0.0143663967f, 0.00695301779f, 0.00303493533f, 0.00133197452f,
    0.000611583295f, 0.000224432792f, 9.3077113e-05f, 3.53560317e-05f,
    1.45651156e-05f, 5.53740074e-06f, 1.97926215e-06f, 7.51851189e-07f,
    2.52735134e-07f, 9.12692286e-08f, 3.23919132e-08f, 1.17495365e-08f,
    3.94039379e-09f, 1.48229395e-09f, 5.00635922e-10f, 1.75358839e-10f,
    5.99673644e-11f, 1.93782455e-11f, 7.17047428e-12f, 2.15286513e-12f,
    8.17175049e-13f, 2.46174527e-13f,
    /* u^3 */
    5.93271943e-06f, 0.128681004f, 0.0602787361f, 0.00268833176f,
    -0.0143277692f, -0.0153974844f, -0.0105055058f, -0.00604198687f,
    -0.00301973755f, -0.00146699895f, -0.000728160783f, -0.000290456112f,
    -0.000128183601f, -5.16861473e-05f, -2.2351247e-05f, -8.91216041e-06f,
    -3.33478556e-06f, -1.31754757e-06f, -4.61263483e-07f, -1.72510809e-07f,
    -6.32865493e-08f, -2.36627482e-08f, -8.18250534e-09f, -3.1586187e-09f,
    -1.09614262e-09f, -3.93598071e-10f, -1.37886813e-10f, -4.56470035e-11f,
    -1.72368907e-11f, -5.2981469e-12f, -2.04776604e-12f, -6.30316058e-13f,
    /* u^4 */
    0.0664162859f, -0.00764723122f, -0.0363817513f, -0.0196130276f,
    -0.00549860811f, 0.00268519251f, 0.00404850394f, 0.00317600789f,
    0.00193930918f, 0.00107883441f, 0.000590640877f, 0.00026056057f,
    0.00012366804f, 5.33953862e-05f, 2.43890918e-05f, 1.02542508e-05f,
    4.03536387e-06f, 1.6642141e-06f, 6.08830533e-07f, 2.36440798e-07f,
    8.98692534e-08f, 3.47048932e-08f, 1.23972166e-08f, 4.91808816e-09f,
    1.75621828e-09f, 6.47283172e-10f, 2.32564287e-10f, 7.89590754e-11f,
    3.0454278e-11f, 9.59241801e-12f, 3.77794107e-12f, 1.18916942e-12f,
    /* u^5 */
    0.000430885237f, -0.0204663537f, 0.00198475784f, 0.00905973371f,
    0.0064724246f, 0.00209753634f, -0.000160067852f, -0.000822261267f,
    -0.00077269203f, -0.000533277285f, -0.000335881661f, -0.000168637023f,
    -8.76084669e-05f, -4.10195789e-05f, -1.99853621e-05f, -8.93059587e-06f,
    -3.71860074e-06f, -1.60858383e-06f, -6.16835223e-07f, -2.49480195e-07f,
    -9.86320714e-08f, -3.94171131e-08f, -1.45779415e-08f, -5.95756422e-09f,
    -2.19181673e-09f, -8.31003211e-10f, -3.06349557e-10f, -1.06799389e-10f,
    -4.21484826e-11f, -1.36055889e-11f, -5.47077791e-12f, -1.75931708e-12f,
    /* u^6 */
    -0.0112593621f, 0.00424560905f, 0.00508977007f, -0.000124180558f,
    -0.00189605018f, -0.00157082151f, -0.000687146559f, -0.000117302239f,
    0.000124452738f, 0.000157280941f, 0.000128772546f, 7.85048323e-05f,
    4.62801254e-05f, 2.40376812e-05f, 1.26497989e-05f, 6.08198116e-06f,
    2.70428632e-06f, 1.23414463e-06f, 5.00335886e-07f, 2.11906411e-07f,
    8.7384123e-08f, 3.6276699e-08f, 1.39258916e-08f, 5.86623905e-09f,
    2.23086261e-09f, 8.70676919e-10f, 3.30524941e-10f, 1.18459395e-10f,
    4.78188218e-11f, 1.58561705e-11f, 6.50928053e-12f, 2.13909988e-12f,
    /* u^7 */
    0.00193056231f, 0.00220029172f, -0.00141543814f, -0.00118240947f,
    -0.000253508246f, 0.000287113362f, 0.000453047745f, 7.93363652e-05f,
    5.65904447e-05f, -2.94324182e-05f, -2.16847038e-05f, -3.15410543e-05f,
    -1.92787666e-05f, -1.23208374e-05f, -6.01399188e-06f, -3.03999309e-06f,
    -1.48239849e-06f, -7.03783428e-07f, -3.51499892e-07f, -1.61915082e-07f,
    -6.27646699e-08f, -2.81648873e-08f, -1.13536736e-08f, -4.57152449e-09f,
    -1.8908668e-09f, -7.10900172e-10f, -3.01933201e-10f, -1.13532093e-10f,
    -4.30612976e-11f, -1.64714856e-11f, -6.11787487e-12f, -2.47177322e-12f};
static const float vm_gelu_dc[32] = {
    0.275206745f, 0.897548854f, 1.46610427f, 1.96868467f, 2.3725369f,
    2.71146965f,  3.02672386f,  3.35669446f, 3.59112883f, 3.85891199f,
    4.15216494f,  4.39823103f,  4.6057601f,  4.81241894f, 5.04754782f,
    5.25588942f,  5.45825434f,  5.66025352f, 5.84705353f, 6.02559328f,
    6.20699644f,  6.36217976f,  6.54556227f, 6.69473648f, 6.87265491f,
    7.04551077f,  7.19503069f,  7.33185673f, 7.48878813f, 7.64108038f,
    7.79001331f,  7.93282461f};
static const float vm_gelu_d[8 * 32] = {
    /* u^0 */
    0.285867095f, -0.0546381697f, -0.12836577f, -0.0886110365f, -0.0478972383f,
    -0.0240433384f, -0.0111400224f, -0.00439341599f, -0.00210401486f,
    -0.000842119509f, -0.000282389723f, -0.000105102939f, -4.3429467e-05f,
    -1.72132932e-05f, -5.6860008e-06f, -2.030122e-06f, -7.14875455e-07f,
    -2.41718595e-07f, -8.54024265e-08f, -3.05465022e-08f, -1.03910702e-08f,
    -4.02128464e-09f, -1.26849031e-09f, -4.83750762e-10f, -1.48706256e-10f,
    -4.58283307e-11f, -1.61528152e-11f, -6.09705949e-12f, -1.94805522e-12f,
    -6.28496658e-13f, -2.03196631e-13f, -6.73714082e-14f,
    /* u^1 */
    -0.739141583f, -0.318514794f, 0.0203559082f, 0.107764609f, 0.0867724568f,
    0.054069262f, 0.0292812008f, 0.0132185416f, 0.00688350713f, 0.00300344778f,
    0.00109695108f, 0.000435992784f, 0.000189738625f, 7.89620317e-05f,
    2.74881568e-05f, 1.02566801e-05f, 3.7624468e-06f, 1.32288631e-06f,
    4.83912743e-07f, 1.78718523e-07f, 6.27382448e-08f, 2.49215013e-08f,
    8.10032308e-09f, 3.16316329e-09f, 9.99470062e-10f, 3.16121934e-10f,
    1.13889745e-10f, 4.38407539e-11f, 1.4319314e-11f, 4.71736669e-12f,
    1.55597323e-12f, 5.25686753e-13f,
    /* u^2 */
    0.207419857f, 0.382292241f, 0.18475388f, 0.00702843023f, -0.0462049842f,
    -0.0459109619f, -0.0319369361f, -0.0173974857f, -0.0100911409f,
    -0.00489595393f, -0.00197850401f, -0.000848238706f, -0.000391461013f,
    -0.000172040323f, -6.34641328e-05f, -2.4850211e-05f, -9.52927894e-06f,
    -3.49466018e-06f, -1.32682771e-06f, -5.07053642e-07f, -1.84046925e-07f,
    -7.51567981e-08f, -2.52124615e-08f, -1.00937187e-08f, -3.28264971e-09f,
    -1.06686815e-09f, -3.93255095e-10f, -1.54506519e-10f, -5.16343461e-11f,
    -1.73836241e-11f, -5.85398006e-12f, -2.01664813e-12f,
    /* u^3 */
    0.222503915f, -0.0440051481f, -0.145866305f, -0.0776454061f, -0.0148151936f,
    0.011093541f, 0.0162179861f, 0.0123812975f, 0.00842723437f, 0.00471831858f,
    0.0021658754f, 0.00101720961f, 0.000502831594f, 0.000235251791f,
    9.26448483e-05f, 3.82750768e-05f, 1.54113586e-05f, 5.91742491e-06f,
    2.33904939e-06f, 9.27341318e-07f, 3.48853177e-07f, 1.46710406e-07f,
    5.08938278e-08f, 2.09186748e-08f, 7.01309411e-09f, 2.34527087e-09f,
    8.85456486e-10f, 3.55401625e-10f, 1.21644361e-10f, 4.18899672e-11f,
    1.44140437e-11f, 5.06687574e-12f,
    /* u^4 */
    -0.0756281018f, -0.0975965187f, 0.00850928947f, 0.0452968702f,
    0.0289161503f, 0.0100667998f, -0.000594511046f, -0.00419191364f,
    -0.00401319657f, -0.00284513389f, -0.0015638388f, -0.000826526608f,
    -0.000444703823f, -0.000224189382f, -9.5259973e-05f, -4.18334021e-05f,
    -1.77914644e-05f, -7.18770389e-06f, -2.9694927e-06f, -1.22529059e-06f,
    -4.79092705e-07f, -2.07951558e-07f, -7.47675557e-08f, -3.16051647e-08f,
    -1.09424034e-08f, -3.77126419e-09f, -1.46022339e-09f, -5.99405359e-10f,
    -2.10360326e-10f, -7.41708084e-11f, -2.6101921e-11f, -9.37042978e-12f,
    /* u^5 */
    -0.0455523729f, 0.0293028634f, 0.0313825384f, -0.00117033988f,
    -0.0118839741f, -0.00931872241f, -0.00426043198f, -0.000525316922f,
    0.000648025074f, 0.000961183105f, 0.000739440206f, 0.000464864366f,
    0.000280503154f, 0.000155592774f, 7.25615391e-05f, 3.41976265e-05f,
    1.55102698e-05f, 6.63545961e-06f, 2.87808098e-06f, 1.24082862e-06f,
    5.05982598e-07f, 2.27537583e-07f, 8.4971191e-08f, 3.70520432e-08f,
    1.32650486e-08f, 4.7215889e-09f, 1.87687821e-09f, 7.90014332e-10f,
    2.84618801e-10f, 1.02807894e-10f, 3.7034098e-11f, 1.35830132e-11f,
    /* u^6 */
    0.0160599817f, 0.0134528959f, -0.00959843956f, -0.00837016944f,
    -0.000680891448f, 0.00250194711f, 0.00246298732f, 0.0012434168f,
    0.000488124118f, -8.50706147e-06f, -0.00018768615f, -0.00017000064f,
    -0.000124077706f, -7.89615515e-05f, -4.16876828e-05f, -2.15152559e-05f,
    -1.05433728e-05f, -4.82801352e-06f, -2.2130439e-06f, -1.00327816e-06f,
    -4.28223643e-07f, -2.00027287e-07f, -7.8135109e-08f, -3.50921354e-08f,
    -1.30825661e-08f, -4.81707563e-09f, -1.96984828e-09f, -8.49518067e-10f,
    -3.14795273e-10f, -1.16859633e-10f, -4.31630322e-11f, -1.61968199e-11f,
    /* u^7 */
    0.00664494932f, -0.00588763971f, -0.00310559548f, 0.00250278297f,
    0.00254430599f, 0.000834080973f, -0.000205822304f, -0.000545406307f,
    -0.000359769096f, -0.000171032851f, -7.82220741e-05f, 3.31741176e-05f,
    3.70178459e-05f, 2.68738331e-05f, 1.60608197e-05f, 1.18569915e-05f,
    5.28196597e-06f, 2.75839216e-06f, 1.4594068e-06f, 7.14686962e-07f,
    3.30166586e-07f, 1.37454947e-07f, 6.2248553e-08f, 2.53508734e-08f,
    1.10148823e-08f, 4.19596047e-09f, 1.81831272e-09f, 6.95684621e-10f,
    2.68336353e-10f, 1.0877492e-10f, 4.21867298e-11f, 1.6970635e-11f};

/*
 * tanh (see vm_tanh): a = |x| clamped to VM_TANH_MAX is cut into 32
 * intervals, uniform in g(a) = a (s + t a) with t = -s/(2 VM_TANH_MAX):
 * interval j holds the a with round(g(a)) = j. The first is [0, 0.072),
 * the next 0.146 wide, and they widen slowly (0.21 at 3, 0.34 at 5) as g
 * levels off, to [7.45, 9.02] for the last. On each, tanh(c + u) is a
 * degree-5 polynomial in u = a - c (exact: every a of the interval is
 * within a factor 2 of c), with c a float where tanh is within 0.005 x
 * 2^-24 of a float (the constant term), chosen so that the rounding of
 * the rest, u p in vm_tanh, costs the fewest ULP of the result: nearer
 * the low end of the first intervals, where the result is smaller. The
 * first has c = 0 and holds a + a (c2 a + ... + c5 a^4): its u^0 and u^1
 * entries are 0, and vm_tanh adds u itself. Error 0.0804 x 2^-24
 * relative. Entries 32 k to 32 k + 31 hold the u^k coefficients of the
 * intervals.
 */
#define VM_TANH_MAX 9.015625f
#define VM_TANH_S 6.9767766f
#define VM_TANH_T -0.386926949f /* -VM_TANH_S / (2 VM_TANH_MAX) */
static const float vm_tanh_c[32] = {
    0.0f,         0.117148243f, 0.262248278f, 0.442158699f, 0.559569895f,
    0.741235495f, 0.878569126f, 1.06551218f,  1.23051655f,  1.40092015f,
    1.56650448f,  1.74629474f,  1.92809403f,  2.12544513f,  2.30256701f,
    2.50969172f,  2.69722748f,  2.90676093f,  3.08166099f,  3.34791422f,
    3.57509542f,  3.7781868f,   4.07595921f,  4.34828138f,  4.63071823f,
    4.93234491f,  5.31212282f,  5.67111206f,  6.02782583f,  6.47332811f,
    7.11885166f,  7.97087955f};
static const float vm_tanh_t[6 * 32] = {
    /* u^0 */
    0.0f, 0.116615266f, 0.256397218f, 0.415432185f, 0.507658243f, 0.629891038f,
    0.705701768f, 0.78776443f, 0.842729092f, 0.88555038f, 0.916467965f,
    0.940952361f, 0.958579063f, 0.971897423f, 0.98019731f, 0.986869574f,
    0.990957677f, 0.994044006f, 0.995798349f, 0.997530937f, 0.998431802f,
    0.998955011f, 0.999423802f, 0.999665737f, 0.99980998f, 0.999896049f,
    0.999951363f, 0.999976277f, 0.999988377f, 0.999995232f, 0.999998689f,
    0.999999762f,
    /* u^1 */
    0.0f, 0.986400843f, 0.934260428f, 0.827416122f, 0.742283106f, 0.603237271f,
    0.501985013f, 0.379427195f, 0.289807677f, 0.215800524f, 0.160086468f,
    0.114608653f, 0.0811261758f, 0.0554153994f, 0.0392132327f, 0.0260884464f,
    0.0180028826f, 0.0118765151f, 0.00838564616f, 0.0049320301f, 0.00313393702f,
    0.00208888575f, 0.00115206384f, 0.000668414228f, 0.000380002719f,
    0.000207890305f, 9.72719354e-05f, 4.74440858e-05f, 2.32458697e-05f,
    9.53664767e-06f, 2.62241088e-06f, 4.76379967e-07f,
    /* u^2 */
    1.93901322e-08f, -0.115029715f, -0.239542231f, -0.343734413f, -0.376826704f,
    -0.379973799f, -0.354251742f, -0.298899531f, -0.24422957f, -0.191102609f,
    -0.146714121f, -0.10784135f, -0.0777657703f, -0.0538579412f, -0.0384366401f,
    -0.0257459152f, -0.0178401377f, -0.0118058147f, -0.00835042074f,
    -0.0049198987f, -0.00312896748f, -0.00208680518f, -0.00115134788f,
    -0.000668198161f, -0.000379892037f, -0.000207884688f, -9.72182388e-05f,
    -4.74107364e-05f, -2.32677539e-05f, -9.53401741e-06f, -2.61866603e-06f,
    -4.79217135e-07f,
    /* u^3 */
    -0.333335757f, -0.315354645f, -0.249962136f, -0.133021235f, -0.0561173111f,
    0.0382675044f, 0.0826623291f, 0.108989842f, 0.109216824f, 0.0972982645f,
    0.081096679f, 0.0632715747f, 0.0475039184f, 0.0338726789f, 0.0246043727f,
    0.0167108141f, 0.0116776489f, 0.00777646713f, 0.00552068138f,
    0.00326351984f, 0.00207942142f, 0.00138857088f, 0.000766711019f,
    0.000445122627f, 0.000253193139f, 0.000138575066f, 6.49212525e-05f,
    3.16980913e-05f, 1.55344133e-05f, 6.35847164e-06f, 1.74890897e-06f,
    3.27494632e-07f,
    /* u^4 */
    8.97730206e-05f, 0.0751516074f, 0.144032016f, 0.169351578f, 0.154352009f,
    0.102553986f, 0.0597392842f, 0.0139460238f, -0.0104915649f, -0.0223428216f,
    -0.0253759548f, -0.0235640313f, -0.0196194537f, -0.0149884149f,
    -0.0113180093f, -0.0079136584f, -0.00562862772f, -0.00379752554f,
    -0.00271348166f, -0.00161552557f, -0.00103827729f, -0.000681994949f,
    -0.000385808089f, -0.000222552524f, -0.000128297077f, -6.89791195e-05f,
    -3.4600911e-05f, -1.69175073e-05f, -7.41448957e-06f, -3.2416126e-06f,
    -9.14656198e-07f, -1.58342587e-07f,
    /* u^5 */
    0.132224828f, 0.110983841f, 0.0560054295f, -0.00568039389f, -0.0495883003f,
    -0.0643723309f, -0.0564761609f, -0.0390682407f, -0.0210444871f,
    -0.00792219862f, -0.000147360188f, 0.00354800513f, 0.00464642933f,
    0.00445037708f, 0.00375970872f, 0.00291448808f, 0.00209432491f,
    0.0014580274f, 0.000981038553f, 0.000648176414f, 0.000411511719f,
    0.000212169121f, 0.000152584631f, 9.08543443e-05f, 5.04817981e-05f,
    2.67552714e-05f, 6.37630819e-06f, 3.12586508e-06f, 2.30511068e-06f,
    1.27442024e-06f, 3.47476202e-07f, 3.97867765e-08f};

/*
 * Far (x < -8): with v = 1/a^2, K(a) = phi(a) R(v) and -D(a) = a phi(a)
 * S(v), R = a Q(a)/phi(a) = 1 - v + 3 v^2 - ... and S = 1 - v R, both
 * times 1/sqrt(2 pi) here, on a in [8, 15]; 0.0065 and 0.0120 x 2^-24.
 * phi comes from e^r = 1 + r + r^2 P(r) on |r| <= 0.3467, one degree
 * less than vm_exp_p; 0.0620 x 2^-24.
 */
static const float vm_gelu_r[5] = {0.398942262f, -0.398931503f, 1.1944176f,
                                   -5.72171974f, 27.4021988f};
static const float vm_gelu_s[5] = {0.398942292f, -0.398947328f, 0.399690539f,
                                   -1.23652685f, 6.02005529f};
static const float vm_gelu_e[5] = {0.499999881f, 0.166665182f, 0.0416696519f,
                                   0.00836895127f, 0.00137450406f};

/* ------------------------------------------------------------ helpers */

/* sum c[k] t^k by Horner's rule with fused steps. */
static inline vf vm_poly(vf t, const float *c, int n) {
    vf p = vf_set(c[n - 1]);
    for (int k = n - 2; k >= 0; --k)
        p = vf_fma(p, t, vf_set(c[k]));
    return p;
}

/*
 * sum t[32 k + j] u^k for k <= deg by Horner's rule with fused steps: the
 * polynomial of interval j (the low five bits of j) from a table of 32
 * intervals whose entries 32 k to 32 k + 31 hold the u^k coefficients.
 */
static inline vf vm_table_poly(vi j, vf u, const float *t, int deg) {
    vf y = vf_lookup32(t + deg * 32, j);
    for (int k = deg - 1; k >= 0; --k)
        y = vf_fma(y, u, vf_lookup32(t + k * 32, j));
    return y;
}

/* 2^n as a float for n in [-126, 127]. */
static inline vf vm_pow2i(vi n) {
    return vi_as_f(vi_sll23(vi_add(n, vi_set(127))));
}

/*
 * y * 2^n rounded once, for n in [-252, 254] and y * 2^(n>>1) normal:
 * the first product is exact, the second rounds (to a subnormal, zero or
 * infinity where the result is out of range). vm_ldexp is the same for n
 * in [-126, 127], with one product. A path with an instruction for this
 * (AVX-512's vscalefps rounds y * 2^n once, as these do) defines
 * VM_HAVE_SCALE and vf_scale(y, n) instead.
 */
#if defined(VM_HAVE_SCALE)
static inline vf vm_scale(vf y, vi n) {
    return vf_scale(y, n);
}
static inline vf vm_ldexp(vf y, vi n) {
    return vf_scale(y, n);
}
/* y * 2^kf for kf an integer in [-252, 254] held as a float, and k = kf +
 * VM_MAGIC (from which the other paths read the integer). */
static inline vf vm_scale_kf(vf y, vf k, vf kf) {
    (void)k;
    return vf_scalef(y, kf);
}
#else
static inline vf vm_scale(vf y, vi n) {
    vi h = vi_sra1(n);
    return vf_mul(vf_mul(y, vm_pow2i(h)), vm_pow2i(vi_sub(n, h)));
}
static inline vf vm_ldexp(vf y, vi n) {
    return vf_mul(y, vm_pow2i(n));
}
static inline vf vm_scale_kf(vf y, vf k, vf kf) {
    (void)kf;
    return vm_scale(y, vi_sub(vf_bits(k), vf_bits(vf_set(VM_MAGIC))));
}
#endif

/*
 * e^x = 2^n (a + b) for x in [-110, 89] (callers clamp): a is e^r
 * rounded to float, b the rest (|b| <= 2^-24 a), with a + b within about
 * 2^-29 of e^r. kf is n as a float.
 *
 * n = round(x log2 e), found with one fused step so that the product is
 * not rounded first; r1 = x - n ln2_hi is exact (the product is exact
 * inside the fused step, and the difference fits: for |n| >= 2 both
 * operands are multiples of 2^-24 and |r1| < 0.5; for |n| = 1 Sterbenz's
 * lemma applies; n = 0 gives x). r = r1 - n ln2_lo rounds, and dr is what
 * that rounding lost (r1 - r is exact). e^(r+dr) = (1 + r + r^2 P(r))
 * (1 + dr) to well below 2^-30, and 1 + r is split into a and the exact
 * remainder (1 - a) + r (Fast2Sum: |1| >= |r|); the sum of the three
 * parts is then renormalised into a + b (Fast2Sum again).
 */
static inline void vm_exp_core(vf x, vf *pa, vf *pb, vi *pn, vf *pkf) {
    vf magic = vf_set(VM_MAGIC);
    vf k = vf_fma(x, vf_set(VM_LOG2E), magic);
    vf kf = vf_sub(k, magic);
    vf r1 = vf_fnma(kf, vf_set(VM_LN2_HI), x);
    vf r = vf_fnma(kf, vf_set(VM_LN2_LO), r1);
    vf dr = vf_fnma(kf, vf_set(VM_LN2_LO), vf_sub(r1, r));
    vf p = vm_poly(r, vm_exp_p, 6);
    vf u = vf_fma(vf_mul(r, r), p, vf_fma(dr, r, dr));
    vf one = vf_set(1.0f);
    vf a = vf_add(one, r);
    vf b = vf_add(vf_add(vf_sub(one, a), r), u);
    vf s = vf_add(a, b);
    *pa = s;
    *pb = vf_add(vf_sub(a, s), b);
    *pn = vi_sub(vf_bits(k), vf_bits(magic));
    *pkf = kf;
}

/* x clamped to [lo, hi], NaN kept (vf_max and vf_min return b on NaN). */
static inline vf vm_clamp(vf x, float lo, float hi) {
    return vf_min(vf_set(hi), vf_max(vf_set(lo), x));
}

/* ---------------------------------------------------------- functions */

/*
 * Lanes below -104 (result +0) compute on 0 instead, so that no lane
 * underflows without need: a subnormal or underflowing product costs a
 * microcode assist on many x86 CPUs, and half of all bit patterns lie
 * there.
 */
static inline vf vm_exp(vf x) {
    vf a, b, kf;
    vi n;
    vf zero = vf_set(0.0f);
    vm under = vf_lt(x, vf_set(-104.0f));
    vm_exp_core(vf_min(vf_set(89.0f), vf_sel(under, zero, x)), &a, &b, &n, &kf);
    return vf_sel(under, zero, vm_scale(a, n));
}

/*
 * e^x = 2^n a for x in [-110, 89] (callers clamp), a = e^r rounded once
 * from 1 + (r + r^2 P(r)): within about 0.7 units of its last place, the
 * leading part of vm_exp_core without its compensated remainder, for
 * functions whose own roundings dominate.
 */
static inline vf vm_exp_lead(vf x, vi *pn) {
    vf magic = vf_set(VM_MAGIC);
    vf k = vf_fma(x, vf_set(VM_LOG2E), magic);
    vf kf = vf_sub(k, magic);
    vf r = vf_fnma(kf, vf_set(VM_LN2_LO), vf_fnma(kf, vf_set(VM_LN2_HI), x));
    vf p = vm_poly(r, vm_exp_p, 6);
    *pn = vi_sub(vf_bits(k), vf_bits(magic));
    return vf_add(vf_set(1.0f), vf_fma(vf_mul(r, r), p, r));
}

/*
 * One division: with t = e^-|x| rounded once (to a subnormal or zero far
 * out) and d = 1 + t, x >= 0 gives 1/d and x < 0 gives t/d. t, d and the
 * quotient each round once. Far below zero d is 1 and the result is t,
 * the exponential with its gradual underflow.
 */
static inline vf vm_sigmoid(vf x) {
    vi n;
    vf a = vm_exp_lead(vf_max(vf_set(-110.0f), vf_neg(vf_abs(x))), &n);
    vf t = vm_scale(a, n);
    vf one = vf_set(1.0f);
    return vf_div(vf_sel(vf_ge(x, vf_set(0.0f)), one, t), vf_add(one, t));
}

/*
 * x * sigmoid(x) with one division: x >= 0 gives x/d and x < 0 gives
 * (x t)/d, with t and d as in sigmoid. Below -69 it is x e^x from the
 * exponential's parts, scaled last (no double rounding into the
 * subnormals); x is clamped to -110 first so that -inf gives -0. +inf,
 * the signed zeros and NaN come through x/d.
 */
static inline vf vm_silu(vf x) {
    vf xc = vf_max(vf_set(-110.0f), x);
    vi n;
    vf a = vm_exp_lead(vf_max(vf_set(-110.0f), vf_neg(vf_abs(xc))), &n);
    vf t = vm_scale(a, n);
    vf num = vf_sel(vf_ge(xc, vf_set(0.0f)), xc, vf_mul(xc, t));
    vf y = vf_div(num, vf_add(vf_set(1.0f), t));
    return vf_sel(vf_lt(xc, vf_set(-69.0f)), vm_scale(vf_mul(xc, a), n), y);
}

/*
 * tanh(a) for a = |x| clamped to VM_TANH_MAX, from the polynomial of a's
 * interval (vm_tanh_t), with the sign of x copied on: no exponential and
 * no division. The interval's index is two fused steps (round(a (s + t
 * a)), read from the low bits of k = a (s + t a) + VM_MAGIC), its centre
 * and each coefficient one lookup. The result is w + u p rounded once,
 * with p = c1 + c2 u + ... + c5 u^4 and w = c0, except on the first
 * interval (k = VM_MAGIC exactly), where c = 0, c1 = 0 and w = u = a: a +
 * a p, so that the rounding of p, near 1 if it held the u^1 term, counts
 * only in the small correction a p (|p| < a^2/3). On AVX-512 a vector of
 * 16 costs 7 fused steps, 7 two-register permutes and 6 other
 * instructions (abs, min, sub, compare, blend, sign).
 *
 * Error, beside the fits' 0.081 x 2^-24: the one rounding at the end, and
 * that of p times u, largest relative to the result on the first
 * intervals past 0.072, where u p is as large as the result (c sits
 * nearer the low end there, see vm_tanh_t); all told 0.7064 ULP at
 * most (vmath.h). For a up to 2^-12 the correction a p is below half an
 * ULP of a and the result is a itself, subnormal a included; a = 0 gives
 * +0 and the sign makes -0. The last polynomial gives exactly 1 from
 * 9.01004 on (tanh rounds to 1 from 9.01091), and the clamp keeps it
 * there up to +inf; NaN comes through u.
 */
static inline vf vm_tanh(vf x) {
    vf a = vf_min(vf_set(VM_TANH_MAX), vf_abs(x));
    vf g = vf_fma(a, vf_set(VM_TANH_T), vf_set(VM_TANH_S));
    vf k = vf_fma(a, g, vf_set(VM_MAGIC));
    vi j = vf_bits(k);
    vf u = vf_sub(a, vf_lookup32(vm_tanh_c, j));
    vf w = vf_sel(vf_eq(k, vf_set(VM_MAGIC)), u, vf_lookup32(vm_tanh_t, j));
    vf p = vm_table_poly(j, u, vm_tanh_t + 32, 4);
    return vf_copysign(vf_fma(p, u, w), x);
}

/*
 * x > 0: x. Otherwise expm1(x) = 2^n (r + u) + (2^n - 1) with r + u =
 * (a - 1) + b (a - 1 exact): one fused step, exact 2^n - 1 for n >= -24;
 * below that 2^n (a + b) - 1. x is clamped to -87 (expm1 is -1 in float
 * well before), so 2^n stays normal.
 */
static inline vf vm_elu(vf x) {
    vf a, b, kf;
    vi n;
    vm_exp_core(vf_max(vf_set(-87.0f), x), &a, &b, &n, &kf);
    vf one = vf_set(1.0f);
    vf t = vm_pow2i(n);
    vf near = vf_fma(t, vf_add(vf_sub(a, one), b), vf_sub(t, one));
    vf far = vf_fma(t, vf_add(a, b), vf_set(-1.0f));
    vf y = vf_sel(vf_ge(kf, vf_set(-24.0f)), near, far);
    vf zero = vf_set(0.0f);
    return vf_sel(vf_gt(x, zero), x, vf_sel(vf_eq(x, zero), x, y));
}

/*
 * max(x, 0) + log1p(t), t = e^-|x| = ta + tb in (0, 1]. log1p(t) =
 * k ln2 + log1p(f) + fl/(1+f): k = 0 and f = ta, fl = tb for t <= sqrt 2
 * - 1; else k = 1, f = (t - 1)/2 with t - 1 split exactly (Fast2Sum), so
 * f is in [sqrt(2)/2 - 1, sqrt(2) - 1] either way. 1/(1+f) is needed only
 * roughly (fl is below 2^-23 f) and is 1 - f + f^2. Below -69 the result
 * is t itself, from the exponential with its gradual underflow.
 */
static inline vf vm_softplus(vf x) {
    vf ax = vf_abs(x);
    vf v = vf_max(vf_set(-110.0f), vf_neg(ax));
    vf a, b, kf;
    vi n;
    vm_exp_core(v, &a, &b, &n, &kf);
    vi nm = vi_max(n, vi_set(-100));
    vf ta = vm_ldexp(a, nm), tb = vm_ldexp(b, nm);
    vf one = vf_set(1.0f), half = vf_set(0.5f);
    vf d = vf_sub(ta, one);
    vf dl = vf_sub(ta, vf_add(d, one));
    vm big = vf_gt(ta, vf_set(VM_SQRT2 - 1.0f));
    vf f = vf_sel(big, vf_mul(half, d), ta);
    vf fl = vf_sel(big, vf_mul(half, vf_add(dl, tb)), tb);
    vf kh = vf_sel(big, vf_set(VM_LN2_HI), vf_set(0.0f));
    vf kl = vf_sel(big, vf_set(VM_LN2_LO), vf_set(0.0f));
    vf f2 = vf_mul(f, f);
    vf inv = vf_fma(f, f, vf_sub(one, f));
    vf rpoly = vf_fma(f, vm_poly(f, vm_log1p_q, 9), vf_set(-0.5f));
    vf rest = vf_fma(f2, rpoly, vf_fma(fl, inv, kl));
    /* kh + f exactly as s + se (Fast2Sum, |kh| >= |f| or kh = 0), then
     * max(x, 0) + s exactly as y + ye (TwoSum); one rounding at the end. */
    vf s = vf_add(kh, f);
    vf se = vf_add(vf_sub(kh, s), f);
    vf m = vf_max(x, vf_set(0.0f));
    vf y = vf_add(m, s);
    vf bb = vf_sub(y, m);
    vf ye = vf_add(vf_sub(m, vf_sub(y, bb)), vf_sub(s, bb));
    y = vf_add(y, vf_add(vf_add(ye, se), rest));
    y = vf_sel(vf_eq(x, vf_set((float)INFINITY)), x, y); /* inf - inf */
    vf tiny = vm_scale(a, n);
    return vf_sel(vf_lt(x, vf_set(-69.0f)), tiny, y);
}

/*
 * gelu(x) = x Phi(x) = x - K(a) for x >= 0 and -K(a) for x < 0, with a =
 * |x| and K(a) = a Q(a) = a Phi(-a) <= a/2: no cancellation on either
 * side, and the subtraction from x is the last rounding for x >= 0.
 *
 * For a <= 8 (every x >= 0 clamps to a = 8, where K is below 2^-25 x, so
 * that large x and +inf come out as themselves) K is the polynomial of
 * its interval, and the sign bit of x picks -0 or x to subtract it from
 * (-0 - K keeps -0 for x = -0). A vector with a lane below -8 also takes
 * the far path, for those lanes (a lane gives the same bits whichever
 * path its vector takes): K(a) = 2^kf (1 + p) R(v) with a clamped to
 * 15, where K (and D) are far below half the smallest subnormal, so -inf
 * gives -0. Subnormal results round twice there (at the fused step, then
 * at the scaling).
 */

/* The interval of a in [0, 8], round(a (s a + 2 s)), in the low bits. */
static inline vi vm_gelu_index(vf a) {
    vf t = vf_fma(a, vf_set(VM_GELU_S), vf_set(VM_GELU_SB));
    return vf_bits(vf_fma(a, t, vf_set(VM_MAGIC)));
}

/* The polynomial of a's interval from table t (centres c). */
static inline vf vm_gelu_poly(vf a, const float *c, const float *t) {
    vi j = vm_gelu_index(a);
    return vm_table_poly(j, vf_sub(a, vf_lookup32(c, j)), t, 7);
}

/*
 * For a in [8, 15]: e^(-a^2/2) = 2^kf (1 + p), and v = 1/a^2. a^2 = sh +
 * sl exactly (sl from a fused step); kf = round(-sh/2 log2 e) and r =
 * -(sh + sl)/2 - kf ln2, where -(sh + kf 2 ln2_hi) is exact (as r1 of
 * vm_exp_core: a multiple of 2^-23 below 1 in magnitude) and sl + kf 2
 * ln2_lo, below 2^-16, joins it with one rounding. p = r + r^2 P(r). k is
 * kf + VM_MAGIC, for the paths that scale by an integer.
 */
typedef struct vm_gelu_gauss {
    vf p, k, kf, v;
} vm_gelu_gauss;

static inline vm_gelu_gauss vm_gelu_far_parts(vf a) {
    vm_gelu_gauss g;
    vf sh = vf_mul(a, a);
    vf sl = vf_fms(a, a, sh);
    vf magic = vf_set(VM_MAGIC);
    g.k = vf_fma(sh, vf_set(-0.5f * VM_LOG2E), magic);
    g.kf = vf_sub(g.k, magic);
    vf r1 = vf_fnms(g.kf, vf_set(2.0f * VM_LN2_HI), sh);
    vf w = vf_fma(g.kf, vf_set(2.0f * VM_LN2_LO), sl);
    vf r = vf_mul(vf_set(0.5f), vf_sub(r1, w));
    g.p = vf_fma(vf_mul(r, r), vm_poly(r, vm_gelu_e, 5), r);
    g.v = vf_div(vf_set(1.0f), sh);
    return g;
}

static inline vf vm_gelu(vf x) {
    vf a = vf_min(vf_set(VM_GELU_NEAR), vf_abs(x));
    vf k = vm_gelu_poly(a, vm_gelu_kc, vm_gelu_k);
    vf y = vf_sub(vf_sel(vf_signbit(x), vf_set(-0.0f), x), k);
    vm far = vf_lt(x, vf_set(-VM_GELU_NEAR));
    if (vm_any(far)) {
        vm_gelu_gauss e =
            vm_gelu_far_parts(vf_min(vf_set(VM_GELU_FAR), vf_abs(x)));
        vf r = vm_poly(e.v, vm_gelu_r, 5);
        vf t = vm_scale_kf(vf_fma(r, e.p, r), e.k, e.kf);
        y = vf_sel(far, vf_neg(t), y);
    }
    return y;
}

/* ---------------------------------------------------------- gradients */

static inline vf vm_exp_grad(vf g, vf x) {
    return vf_mul(g, vm_exp(x));
}

static inline vf vm_sigmoid_grad(vf g, vf x) {
    vf s = vm_sigmoid(x);
    return vf_mul(vf_mul(g, s), vf_sub(vf_set(1.0f), s));
}

static inline vf vm_tanh_grad(vf g, vf x) {
    vf t = vm_tanh(x);
    return vf_mul(g, vf_sub(vf_set(1.0f), vf_mul(t, t)));
}

static inline vf vm_silu_grad(vf g, vf x) {
    vf s = vm_sigmoid(x);
    vf xs1 = vf_mul(vf_mul(x, s), vf_sub(vf_set(1.0f), s));
    return vf_mul(g, vf_add(s, xs1));
}

static inline vf vm_softplus_grad(vf g, vf x) {
    return vf_mul(g, vm_sigmoid(x));
}

static inline vf vm_elu_grad(vf g, vf x) {
    return vf_sel(vf_gt(x, vf_set(0.0f)), g, vf_mul(g, vm_exp(x)));
}

/*
 * g (Phi(x) + x phi(x)): D(a) = Q(a) - a phi(a) for x with the sign bit
 * set, 1 - D(a) otherwise (a clamped as in vm_gelu, so that +inf gives
 * 1); D from the near table, and for x < -8 from -a 2^kf (1 + p) S(v)
 * (-inf gives -0).
 */
static inline vf vm_gelu_grad(vf g, vf x) {
    vf a = vf_min(vf_set(VM_GELU_NEAR), vf_abs(x));
    vf d = vm_gelu_poly(a, vm_gelu_dc, vm_gelu_d);
    vf y = vf_sel(vf_signbit(x), d, vf_sub(vf_set(1.0f), d));
    vm far = vf_lt(x, vf_set(-VM_GELU_NEAR));
    if (vm_any(far)) {
        vf af = vf_min(vf_set(VM_GELU_FAR), vf_abs(x));
        vm_gelu_gauss e = vm_gelu_far_parts(af);
        vf q = vf_mul(af, vm_poly(e.v, vm_gelu_s, 5));
        y = vf_sel(far, vf_neg(vm_scale_kf(vf_fma(q, e.p, q), e.k, e.kf)), y);
    }
    return vf_mul(g, y);
}

/* ------------------------------------------------------- array loops */

/*
 * Whole vectors, then the tail through a VM_W-element buffer, so that the
 * tail runs the same vector code (lanes past n compute on zeros). Forced
 * inline so that fn is a direct call into each array function below.
 */
static VM_INLINE void vm_run1(vf (*fn)(vf), const float *x, float *o,
                              int64_t n) {
    int64_t i = 0;
    for (; i + VM_W <= n; i += VM_W)
        vf_store(o + i, fn(vf_load(x + i)));
    if (i < n) {
        float buf[VM_W] = {0};
        for (int64_t j = i; j < n; ++j)
            buf[j - i] = x[j];
        vf_store(buf, fn(vf_load(buf)));
        for (int64_t j = i; j < n; ++j)
            o[j] = buf[j - i];
    }
}

static VM_INLINE void vm_run2(vf (*fn)(vf, vf), const float *g, const float *x,
                              float *o, int64_t n) {
    int64_t i = 0;
    for (; i + VM_W <= n; i += VM_W)
        vf_store(o + i, fn(vf_load(g + i), vf_load(x + i)));
    if (i < n) {
        float bg[VM_W] = {0}, bx[VM_W] = {0};
        for (int64_t j = i; j < n; ++j) {
            bg[j - i] = g[j];
            bx[j - i] = x[j];
        }
        vf_store(bx, fn(vf_load(bg), vf_load(bx)));
        for (int64_t j = i; j < n; ++j)
            o[j] = bx[j - i];
    }
}

static void vm_exp_array(const float *x, float *o, int64_t n) {
    vm_run1(vm_exp, x, o, n);
}
static void vm_tanh_array(const float *x, float *o, int64_t n) {
    vm_run1(vm_tanh, x, o, n);
}
static void vm_sigmoid_array(const float *x, float *o, int64_t n) {
    vm_run1(vm_sigmoid, x, o, n);
}
static void vm_gelu_array(const float *x, float *o, int64_t n) {
    vm_run1(vm_gelu, x, o, n);
}
static void vm_silu_array(const float *x, float *o, int64_t n) {
    vm_run1(vm_silu, x, o, n);
}
static void vm_softplus_array(const float *x, float *o, int64_t n) {
    vm_run1(vm_softplus, x, o, n);
}
static void vm_elu_array(const float *x, float *o, int64_t n) {
    vm_run1(vm_elu, x, o, n);
}

static void vm_exp_grad_array(const float *g, const float *x, float *o,
                              int64_t n) {
    vm_run2(vm_exp_grad, g, x, o, n);
}
static void vm_tanh_grad_array(const float *g, const float *x, float *o,
                               int64_t n) {
    vm_run2(vm_tanh_grad, g, x, o, n);
}
static void vm_sigmoid_grad_array(const float *g, const float *x, float *o,
                                  int64_t n) {
    vm_run2(vm_sigmoid_grad, g, x, o, n);
}
static void vm_gelu_grad_array(const float *g, const float *x, float *o,
                               int64_t n) {
    vm_run2(vm_gelu_grad, g, x, o, n);
}
static void vm_silu_grad_array(const float *g, const float *x, float *o,
                               int64_t n) {
    vm_run2(vm_silu_grad, g, x, o, n);
}
static void vm_softplus_grad_array(const float *g, const float *x, float *o,
                                   int64_t n) {
    vm_run2(vm_softplus_grad, g, x, o, n);
}
static void vm_elu_grad_array(const float *g, const float *x, float *o,
                              int64_t n) {
    vm_run2(vm_elu_grad, g, x, o, n);
}

static const sw_vmath_impl vm_impl = {
    VM_NAME,
    {vm_exp_array, vm_tanh_array, vm_sigmoid_array, vm_gelu_array,
     vm_silu_array, vm_softplus_array, vm_elu_array},
    {vm_exp_grad_array, vm_tanh_grad_array, vm_sigmoid_grad_array,
     vm_gelu_grad_array, vm_silu_grad_array, vm_softplus_grad_array,
     vm_elu_grad_array}};
