# ruff: noqa: E501 (signature lines and example output are kept whole)
r"""The docstrings of the extension module's types and functions.

The C sources keep the code and this file keeps the prose: at import the
extension attaches each entry to the object its path names ("" the module,
"name" a module function or type, "Type.member" a method, class method,
property or member of a type). A text starts with "name(signature)\n--\n\n"
where the object has a signature, the form CPython reads
``__text_signature__`` from.
"""

DOCS = {
    "": """The C extension behind strideweave: layouts, carriers, tensors and operations.

Import the public names from strideweave or its submodules; this module is an implementation
detail.""",
    "AwaitMove": """The handle of one move_async call; wait() returns the moved Tensor.

Returns:
    AwaitMove: not constructible from Python.

Examples:
    >>> from strideweave.carriers.move import AwaitMove
    >>> AwaitMove()
    Traceback (most recent call last):
    TypeError: cannot create 'strideweave.carriers.move.AwaitMove' instances
""",
    "AwaitProjection": """The handle of one TiledEvictable projection; wait() returns the compact Tensor.

Returns:
    AwaitProjection: not constructible from Python.

Examples:
    >>> from strideweave.carriers.tiled_evictable import AwaitProjection
    >>> from strideweave.carriers.move import AwaitResult
    >>> issubclass(AwaitProjection, AwaitResult)
    True
""",
    "AwaitResidency": """The handle of one promote_async or evict_async call; wait() returns None.

Returns:
    AwaitResidency: not constructible from Python.

Examples:
    >>> from strideweave.carriers.tiled_evictable import AwaitResidency
    >>> AwaitResidency()
    Traceback (most recent call last):
    TypeError: cannot create 'strideweave.carriers.tiled_evictable.AwaitResidency' instances
""",
    "AwaitResult": """The completion handle of work the framework started.

done tells whether the work reached its terminal outcome; wait() blocks until then and
returns the value or raises the failure, the same on every call and from every thread.
Handles are not awaitables: there is no __await__. Only the framework makes them.

Returns:
    AwaitResult: not constructible from Python.

Examples:
    >>> from strideweave.carriers.move import AwaitMove, AwaitResult
    >>> issubclass(AwaitMove, AwaitResult), hasattr(AwaitResult, '__await__')
    (True, False)
""",
    "AwaitResult.done": """True once the work has a terminal outcome (success or failure).

Returns:
    bool: whether wait() would return at once.

Examples:
    >>> from strideweave import CPU, Layout, Shape, Stride, Tensor
    >>> from strideweave.carriers.move import move_async
    >>> move_async(Tensor(CPU(1), 0, Layout(Shape(1), Stride(1))), CPU(1)).done
    True
""",
    "AwaitResult.wait": """wait($self, /)
--

Blocks until the work has its terminal outcome, then returns the value or raises the
failure.

Every call returns the identical object or raises the same exception. The GIL is released
while waiting.

Returns:
    object: the completed value (the moved Tensor for AwaitMove).

Examples:
    >>> from strideweave import CPU, Layout, Shape, Stride, Tensor
    >>> from strideweave.carriers.move import move_async
    >>> h = move_async(Tensor(CPU(1), 0, Layout(Shape(1), Stride(1))), CPU(1))
    >>> h.wait() is h.wait()
    True
""",
    "CPU": """CPU(size, pointer=None, *, mutable=True, dtype=None, empty=False)
--

Native memory of Float32, Int32 or Bool elements.

With no pointer the carrier owns a fresh 64-byte aligned buffer, zero-filled unless
empty=True. With a pointer (an int address, for example array.array(...).buffer_info()[0])
it aliases the caller's memory, which is never freed or initialised here. Float32 elements
read back as Python floats (widened from float32), Int32 as ints, Bool as bools.

Args:
    size: the element count, >= 0.
    pointer: None, or the positive address of size elements.
    mutable: whether the carrier can be written.
    dtype: DType.Float32 (the default, also for None), DType.Int32 or DType.Bool.
    empty: skip zero-filling a fresh buffer.

Returns:
    CPU: the carrier.

Raises:
    ValueError: 'CPU size must be non-negative', 'CPU dtype must be DType.Float32,
        DType.Int32 or DType.Bool', 'CPU pointer must be a positive integer address'.
    TypeError: a non-int size, or 'CPU pointer must be an integer address or None'.

Examples:
    >>> c = CPU(3)
    >>> c[1] = 0.1
    >>> c[1], c.size(), c.dtype()
    (0.10000000149011612, 3, <DType.Float32: 'Float32'>)
    >>> CPU(2, dtype=DType.Int32)[0]
    0
""",
    "CPU._dispatch_op": """_dispatch_op($self, name, /)
--

A fresh operation from the CPU table (a hook: subclasses may override it and reach this
table through super()).

Args:
    name: the canonical operation name.

Returns:
    Operation: a fresh, undispatched operation.

Raises:
    NotImplementedError: "CPU carrier does not support operation '<name>'".

Examples:
    >>> type(CPU(1)._dispatch_op('view')).__name__
    'GenericViewOperation'
""",
    "CPU.allocate_like": """allocate_like($self, /, size, *, mutable=True, dtype=None, empty=False)
--

A fresh CPU carrier, zero-filled unless empty=True.

Args:
    size: the element count, >= 0.
    mutable: whether the new carrier can be written.
    dtype: the element type; None means this carrier's.
    empty: skip zero-filling.

Returns:
    CPU: the new carrier.

Raises:
    ValueError: 'CPU allocation size must be non-negative'.

Examples:
    >>> CPU(1).allocate_like(2, dtype=DType.Int32).dtype()
    <DType.Int32: 'Int32'>
""",
    "CPU.dlpack_info": """dlpack_info($self, /)
--

Where a DLPack export finds the data: host memory.

Returns:
    dict: {'pointer': address, 'device_type': 1, 'device_id': 0}; the pointer is 0 after
        release.

Examples:
    >>> info = CPU(1).dlpack_info()
    >>> info['device_type'], info['device_id']
    (1, 0)
""",
    "CPU.dtype": """dtype($self, /)
--

The element type.

Returns:
    DType: Float32, Int32 or Bool.

Examples:
    >>> CPU(1, dtype=DType.Bool).dtype()
    <DType.Bool: 'Bool'>
""",
    "CPU.get_value": """get_value($self, index, /)
--

Reads one element, range-checked.

Args:
    index: the element, 0 <= index < size().

Returns:
    float | int | bool: the value, by dtype.

Raises:
    IndexError: 'Carrier index out of range'.
    RuntimeError: 'Carrier is released'.

Examples:
    >>> CPU(2).get_value(1)
    0.0
""",
    "CPU.new_like": """new_like($self, /, values, *, mutable=True, dtype=None)
--

A new CPU carrier holding values (None entries become 0).

Works after release.

Args:
    values: an iterable of numbers or None.
    mutable: whether the new carrier can be written.
    dtype: the element type; None means this carrier's.

Returns:
    CPU: a carrier of len(values) elements.

Examples:
    >>> list(CPU(0, dtype=DType.Int32).new_like([1, None, 3]))
    [1, 0, 3]
""",
    "CPU.pointer": """pointer($self, /)
--

The address of the first element; 0 after release.

Returns:
    int: the buffer address.

Examples:
    >>> CPU(4).pointer() % 64
    0
""",
    "CPU.scatter": """scatter($self, /, to_scatter, scatter_onto, mapping, mapping_offset=0)
--

Copies to_scatter[i] to element scatter_onto.offset + mapping_offset + mapping(i), for every
logical i, in one pass; the version rises once.

Int32 sources convert to float for a Float32 destination.

Args:
    to_scatter: a Tensor over a CPU carrier.
    scatter_onto: a Tensor over this carrier; only its offset is used.
    mapping: a Layout with the shape of to_scatter's layout.
    mapping_offset: added to every destination index, >= 0.

Returns:
    None.

Raises:
    TypeError: 'scatter_onto must be a Tensor', 'scatter_onto must be backed by a CPU
        carrier' (the same for to_scatter), 'mapping must be a Layout', 'cannot scatter
        Float32 values into an Int32 CPU carrier'.
    ValueError: 'mapping_offset must be non-negative', 'scatter_onto must be backed by this
        carrier', 'mapping shape must match to_scatter layout shape', 'scatter mapping
        exceeds destination carrier size'.
    RuntimeError: 'Carrier is not mutable', 'scatter_onto carrier is released', 'to_scatter
        carrier is released'.

Examples:
    >>> dst = CPU(3)
    >>> src = Tensor(CPU(1).new_like([5, 6]), 0, Layout(Shape(2), Stride(1)))
    >>> dst.scatter(src, Tensor(dst, 1, Layout(Shape(2), Stride(1))), Layout(Shape(2), Stride(1)))
    >>> list(dst), dst.version
    ([0.0, 5.0, 6.0], 1)
""",
    "CPU.set_value": """set_value($self, index, value, /)
--

Writes one element and bumps the version by one.

Float32 takes anything float() converts from a number (bool too; ints too large become inf);
Int32 takes integers (__index__) in int32 range; Bool takes numbers (non-zero is True).

Args:
    index: the element, 0 <= index < size().
    value: the new value.

Returns:
    None.

Raises:
    RuntimeError: 'Carrier is not mutable', 'Carrier is released'.
    IndexError: 'Carrier index out of range'.
    TypeError: 'CPU value must be a number', 'CPU value must be an integer'.
    OverflowError: 'CPU value is out of int32 range'.

Examples:
    >>> c = CPU(2, dtype=DType.Int32)
    >>> c.set_value(0, 7)
    >>> c[0], c.version
    (7, 1)
""",
    "CPU.size": """size($self, /)
--

The number of elements; 0 after release.

Returns:
    int: the element count.

Examples:
    >>> CPU(4).size()
    4
""",
    "Carrier": """Carrier()
--

Storage plus the shared carrier policy; the base of every carrier.

The base owns the rules all carriers share: a version counter that every successful public
mutation bumps, mutability (the _is_mutable hook, and not owned by a composite carrier),
release, element access with bounds checks, and the ownership protocol of composite
carriers. A subclass implements the storage hooks in Python: size(), dtype(), get_value(i),
new_like(values, *, mutable=True) and allocate_like(size, *, mutable=True, dtype=None,
empty=False), and optionally _is_mutable(), set_value(i, v) and _release(). Carrier() itself
can be constructed; its storage hooks raise RuntimeError ('Tried to call pure virtual
function "Carrier::size"', ...).

Returns:
    Carrier: a carrier whose hooks are its Python methods.

Examples:
    >>> class Squares(Carrier):
    ...     def size(self):
    ...         return 4
    ...     def dtype(self):
    ...         return DType.Any
    ...     def get_value(self, index):
    ...         return index * index
    >>> c = Squares()
    >>> c[3], c.is_mutable(), c.version
    (9, False, 0)
    >>> Carrier().size()
    Traceback (most recent call last):
    ...
    RuntimeError: Tried to call pure virtual function "Carrier::size"
""",
    "Carrier._begin_owner_access": """_begin_owner_access($self, token, /)
--

Starts (re-entrantly) the owner's privileged access on this thread.

Args:
    token: the ownership token.

Returns:
    None.

Raises:
    RuntimeError: 'Invalid carrier ownership token', or 'Carrier is already being accessed
        by its owner on another thread'.

Examples:
    >>> c = CPU(1)
    >>> t = c._claim_ownership()
    >>> c._begin_owner_access(t)
    >>> c.is_mutable(), c._has_owner_access()
    (True, True)
""",
    "Carrier._claim_ownership": """_claim_ownership($self, /)
--

Makes a composite carrier the owner; returns its token.

Returns:
    int: the ownership token (tokens start at 1).

Raises:
    RuntimeError: 'Carrier is released', or 'Carrier is already owned by another carrier'.

Examples:
    >>> CPU(1)._claim_ownership() > 0
    True
""",
    "Carrier._end_owner_access": """_end_owner_access($self, token, /)
--

Ends one level of owner access.

Args:
    token: the ownership token.

Returns:
    None.

Raises:
    RuntimeError: 'Invalid carrier ownership token', or 'Carrier owner access must end on
        the thread where it began'.

Examples:
    >>> c = CPU(1)
    >>> t = c._claim_ownership()
    >>> c._begin_owner_access(t)
    >>> c._end_owner_access(t)
    >>> c._has_owner_access()
    False
""",
    "Carrier._has_owner_access": """_has_owner_access($self, /)
--

Whether this thread is inside the owner's access.

Returns:
    bool: owned, and accessed by the owner on this thread.

Examples:
    >>> CPU(1)._has_owner_access()
    False
""",
    "Carrier._increment_version": """_increment_version($self, /)
--

Bumps the version by one.

Returns:
    None.

Raises:
    RuntimeError: 'Carrier is owned by another carrier and cannot be modified directly'
        without owner access.

Examples:
    >>> c = CPU(2)
    >>> c._increment_version()
    >>> c.version
    1
""",
    "Carrier._relinquish_ownership": """_relinquish_ownership($self, token, /)
--

Gives the ownership up.

Args:
    token: the token _claim_ownership returned.

Returns:
    None.

Raises:
    RuntimeError: 'Invalid carrier ownership token', or 'Carrier ownership cannot be
        relinquished during owner access'.

Examples:
    >>> c = CPU(1)
    >>> c._relinquish_ownership(c._claim_ownership())
    >>> c.is_owned()
    False
""",
    "Carrier.allocate_like": """allocate_like($self, /, size, *, mutable=True, dtype=None, empty=False)
--

Fresh storage of this kind (a hook: subclasses implement it).

Args:
    size: the element count, >= 0.
    mutable: whether the new carrier can be written.
    dtype: the element type; None means this carrier's.
    empty: skip zero-filling where the backend can.

Returns:
    Carrier: the new carrier.

Raises:
    RuntimeError: on the base class (pure virtual).

Examples:
    >>> CPU(1).allocate_like(3).size()
    3
""",
    "Carrier.dispatch_op": """dispatch_op($self, operation_name, /)
--

A fresh operation for a canonical name, tagged with the name and this carrier's exact class.

Calls the _dispatch_op hook (a Python override when the class has one; CPU and Generic have
native tables), requires an Operation that was never dispatched, and records _operation_name
and _dispatch_carrier_class on it. An instance method only.

Args:
    operation_name: the canonical name, such as 'add' or 'relu'.

Returns:
    Operation: the fresh operation.

Raises:
    NotImplementedError: "Carrier class does not support operation '<name>'" (or the
        backend's own message).
    TypeError: 'Carrier._dispatch_op must return an Operation', 'Carrier._dispatch_op must
        return a fresh Operation instance'.

Examples:
    >>> op = Generic([1.0]).dispatch_op('relu')
    >>> type(op).__name__, op._operation_name, op._dispatch_carrier_class is Generic
    ('GenericReLUOperation', 'relu', True)
""",
    "Carrier.dlpack_info": """dlpack_info($self, /)
--

Where a DLPack export finds the data (a hook).

Tensor.__dlpack__ and __dlpack_device__ ask it on every call. A carrier opts in by
overriding it: 'pointer' is the integer address the tensor offset counts from (non-zero when
the tensor has elements), 'device_type' and 'device_id' the DLPack device, reported
verbatim.

Returns:
    dict: 'pointer', 'device_type' and 'device_id' (any value dict() accepts; more keys are
        ignored).

Raises:
    BufferError: 'DLPack is not supported for this carrier' (the default).

Examples:
    >>> Generic([1]).dlpack_info()
    Traceback (most recent call last):
    ...
    BufferError: DLPack is not supported for this carrier
""",
    "Carrier.dtype": """dtype($self, /)
--

The element type (a hook: subclasses implement it).

Returns:
    DType: the carrier's dtype.

Raises:
    RuntimeError: on the base class (pure virtual).

Examples:
    >>> CPU(3).dtype()
    <DType.Float32: 'Float32'>
""",
    "Carrier.facet": """facet($self, kind, /)
--

The facet registered under exactly kind in this class's CarrierDefinition.

Args:
    kind: a CarrierFacet subclass.

Returns:
    CarrierFacet | None: the facet, or None (always None for a definition-free carrier).

Raises:
    TypeError: 'facet type must be a CarrierFacet subclass'.

Examples:
    >>> import strideweave as sw
    >>> sw.CPU(1).facet(sw.CarrierFacet) is None
    True
""",
    "Carrier.require_facet": """require_facet($self, kind, /)
--

The facet registered under exactly kind, or NotImplementedError naming kind.

Args:
    kind: a CarrierFacet subclass.

Returns:
    CarrierFacet: the facet.

Raises:
    TypeError: 'facet type must be a CarrierFacet subclass'.
    NotImplementedError: '<Class> has no <kind> facet'.

Examples:
    >>> import strideweave as sw
    >>> sw.CPU(1).require_facet(sw.CarrierFacet)
    Traceback (most recent call last):
    ...
    NotImplementedError: CPU has no CarrierFacet facet
""",
    "Carrier.get_value": """get_value($self, index, /)
--

Reads one element (a hook: subclasses implement it).

carrier[i] checks release and bounds, then calls this.

Args:
    index: the element, 0 <= index < size().

Returns:
    object: the element's value.

Raises:
    RuntimeError: on the base class (pure virtual).

Examples:
    >>> Generic([4, 5]).get_value(1)
    5
""",
    "Carrier.is_mutable": """is_mutable($self, /)
--

Whether public interfaces may write now.

True when the storage is intrinsically mutable (the _is_mutable hook) and no composite
carrier owns this one, or its owner is accessing it on this thread.

Returns:
    bool: writable now.

Examples:
    >>> CPU(2).is_mutable(), CPU(2, mutable=False).is_mutable()
    (True, False)
""",
    "Carrier.is_owned": """is_owned($self, /)
--

Whether a composite carrier holds the ownership token, or a pending move owns the carrier.

Returns:
    bool: owned by another carrier, or the source or destination of a move in progress.

Examples:
    >>> c = CPU(2)
    >>> token = c._claim_ownership()
    >>> c.is_owned(), c.is_mutable()
    (True, False)
""",
    "Carrier.is_released": """is_released($self, /)
--

Whether release() has run.

Returns:
    bool: released.

Examples:
    >>> c = CPU(2)
    >>> c.release()
    >>> c.is_released()
    True
""",
    "Carrier.new_like": """new_like($self, /, values, *, mutable=True)
--

A new carrier of this kind holding values (a hook).

Args:
    values: an iterable of element values; None marks a hole.
    mutable: whether the new carrier can be written.

Returns:
    Carrier: the new carrier.

Raises:
    RuntimeError: on the base class (pure virtual).

Examples:
    >>> CPU(1).new_like([1, None, 3])[1]
    0.0
""",
    "Carrier.operation_capabilities": """operation_capabilities($self, /, operation_name=None)
--

The operation plans this carrier executes.

An independent carrier reads its exact class's declared set; a dependent carrier (Evictable,
a DependentCarrier) its instance snapshot. The answer never depends on the carrier's current
dtype.

Args:
    operation_name: only the capabilities of this operation (its plan name, such as
        'reduce_sum'); None for all.

Returns:
    tuple[OperationCapability, ...]: sorted by field values.

Examples:
    >>> import strideweave as sw
    >>> caps = sw.CPU(1).operation_capabilities('relu')
    >>> [c.output.value for c in caps]
    ['Float32', 'Int32']
""",
    "Carrier.release": """release($self, /)
--

Frees the storage for good (idempotent; the version does not change).

Calls the _release hook once; afterwards every element access raises RuntimeError('Carrier
is released').

Returns:
    None.

Raises:
    RuntimeError: owned by another carrier without owner access.

Examples:
    >>> c = CPU(2)
    >>> c.release()
    >>> c[0]
    Traceback (most recent call last):
    ...
    RuntimeError: Carrier is released
""",
    "Carrier.require_operation_plan": """require_operation_plan($self, plan, /)
--

The capability of this carrier matching a plan.

Args:
    plan: an OperationPlan.

Returns:
    OperationCapability: the match.

Raises:
    UnsupportedOperationPlan: no capability matches (the message is
        unsupported_plan_reason's).

Examples:
    >>> import strideweave as sw
    >>> from strideweave.carriers.operation_policy import resolve_operation_plan
    >>> plan = resolve_operation_plan('relu', sw.DType.Int32)
    >>> sw.CPU(1).require_operation_plan(plan).compute.value
    'int32_exact'
""",
    "Carrier.scatter": """scatter($self, /, to_scatter, scatter_onto, mapping, mapping_offset=0)
--

Writes to_scatter[i] at scatter_onto.offset + mapping_offset + mapping(i) of this carrier,
for every logical i (a hook).

Args:
    to_scatter: the source Tensor.
    scatter_onto: a Tensor backed by this carrier; only its offset is used.
    mapping: a Layout with the shape of to_scatter's layout.
    mapping_offset: added to every destination index, >= 0.

Returns:
    None.

Raises:
    RuntimeError: on the base class (pure virtual).

Examples:
    >>> dst = CPU(4)
    >>> src = Tensor(CPU(1).new_like([1, 2]), 0, Layout(Shape(2), Stride(1)))
    >>> dst.scatter(src, Tensor(dst, 0, Layout(Shape(4), Stride(1))), Layout(Shape(2), Stride(2)))
    >>> list(dst)
    [1.0, 0.0, 2.0, 0.0]
""",
    "Carrier.size": """size($self, /)
--

The number of elements (a hook: subclasses implement it).

Returns:
    int: the element count.

Raises:
    RuntimeError: on the base class, 'Tried to call pure virtual function "Carrier::size"'.

Examples:
    >>> CPU(3).size()
    3
""",
    "Carrier.supports_operation_plan": """supports_operation_plan($self, plan, /)
--

Whether this carrier executes exactly this plan.

Args:
    plan: an OperationPlan.

Returns:
    bool: True when a capability matches it on every field.

Examples:
    >>> import strideweave as sw
    >>> from strideweave.carriers.operation_policy import resolve_operation_plan
    >>> plan = resolve_operation_plan('add', sw.DType.Int32, sw.DType.Int32)
    >>> sw.CPU(1).supports_operation_plan(plan)
    True
""",
    "Carrier.supports_storage_dtype": """supports_storage_dtype($self, dtype, /)
--

Whether this carrier's implementation could allocate homogeneous storage of dtype.

It never allocates, and the answer does not depend on the current dtype, size, mutability,
ownership, residency or release state: CPU stores Float32, Int32 and Bool; Generic those and
Any and Floating; FileBacked Float32, Int32 and Floating; Evictable what both tiers store;
another carrier only the dtype it holds.

Args:
    dtype: a DType.

Returns:
    bool.

Raises:
    TypeError: dtype is not a DType.

Examples:
    >>> import strideweave as sw
    >>> sw.CPU(1).supports_storage_dtype(sw.DType.Bool)
    True
    >>> sw.CPU(1).supports_storage_dtype(sw.DType.Floating)
    False
""",
    "Carrier.unsupported_plan_reason": """unsupported_plan_reason($self, plan, /)
--

Why this carrier does not execute a plan.

Args:
    plan: an OperationPlan.

Returns:
    str | None: a stable sentence, or None when it is supported.

Examples:
    >>> import strideweave as sw
    >>> from strideweave.carriers.operation_policy import resolve_operation_plan
    >>> plan = resolve_operation_plan('relu', sw.DType.Float32)
    >>> sw.CPU(1).unsupported_plan_reason(plan) is None
    True
""",
    "Carrier.version": """The version counter: starts at 0; every successful public mutation bumps it.

Every alias and view of the carrier sees the same number.

Returns:
    int: the version, >= 0.

Examples:
    >>> c = CPU(2)
    >>> c[0] = 1.5
    >>> c.version
    1
""",
    "CpuToFileBackedMoveOperation": """CpuToFileBackedMoveOperation()
--

The bulk move from CPU to FileBacked: the layout's whole physical span, holes included,
written to the file in large pieces.

Pinned to exactly CPU sources and FileBacked destinations; the destination's version is
unchanged.

Returns:
    CpuToFileBackedMoveOperation: the operation.

Examples:
    >>> from strideweave import CPU, FileBacked
    >>> CpuToFileBackedMoveOperation.source_class is CPU
    True
""",
    "ElementwiseMoveOperation": """ElementwiseMoveOperation()
--

The move of every pair without a registered operation: output[i] = tensor[i] for every
logical index.

Holes of the destination keep their values; the destination's version rises once per
element.

Returns:
    ElementwiseMoveOperation: the operation.

Examples:
    >>> from strideweave import CPU
    >>> from strideweave.carriers.move import dispatch_move
    >>> dispatch_move(CPU, CPU) is ElementwiseMoveOperation
    True
""",
    "Evictable": """Evictable(primary, secondary, /)
--

A two-tier storage hierarchy: values live in primary while promoted and in secondary after
evict().

The constructor takes exclusive ownership of both carriers: they stay readable through old
references while live, but refuse direct writes, scatter, release and move. Computation runs
on the primary through EvictableOperation adapters; element access, operations and scatter
fail while evicted. The hierarchy's size, dtype and mutability are the primary's at
construction. When the hierarchy is garbage-collected it gives both current tiers back.

Args:
    primary: a live, unowned carrier with at least one element.
    secondary: a live, unowned, mutable carrier of the same dtype.

Returns:
    Evictable: the hierarchy.

Raises:
    TypeError: 'primary must be a Carrier instance', 'secondary must be a Carrier instance',
        'primary and secondary dtypes must match'.
    ValueError: 'primary and secondary must be distinct carriers', 'primary carrier must
        contain at least one element'.
    RuntimeError: 'primary carrier is released', 'secondary carrier is released', 'primary
        carrier is already owned by another carrier', 'secondary carrier is already owned by
        another carrier', 'secondary carrier must be mutable'.

Examples:
    >>> primary = Generic([1.0])
    >>> carrier = Evictable(primary, Generic([0.0]))
    >>> carrier.is_mutable(), primary.is_owned(), primary.is_mutable()
    (True, True, False)
    >>> carrier[0] = 2.0
    >>> carrier.version, primary[0]
    (1, 2.0)
""",
    "Evictable._dispatch_op": """_dispatch_op($self, name, /)
--

An EvictableOperation wrapping the primary's dispatched operation of this name (a hook:
subclasses may override it and reach this one through super()).

Args:
    name: the canonical operation name.

Returns:
    EvictableOperation: a fresh, undispatched adapter.

Raises:
    RuntimeError: 'Evictable carrier is evicted; call promote() first'.

Examples:
    >>> e = Evictable(Generic([1.0]), Generic([]))
    >>> type(e._dispatch_op('relu').primary_operation).__name__
    'GenericReLUOperation'
""",
    "Evictable.allocate_like": """allocate_like($self, /, size, *, mutable=True, dtype=None, empty=False)
--

A new hierarchy: the primary's allocate_like(size) over an empty secondary like this one's.

Args:
    size: the element count, >= 1.
    mutable: whether the new primary can be written.
    dtype: the element type; None means this carrier's.
    empty: passed on to the primary.

Returns:
    Evictable: the new hierarchy.

Raises:
    ValueError: 'primary carrier must contain at least one element'.

Examples:
    >>> e = Evictable(CPU(1), CPU(0))
    >>> e.allocate_like(3).size()
    3
""",
    "Evictable.dlpack_info": """dlpack_info($self, /)
--

Refuses DLPack export, promoted or not.

Returns:
    dict: never returns.

Raises:
    BufferError: 'DLPack is not supported for Evictable carrier'.

Examples:
    >>> Evictable(Generic([1.0]), Generic([])).dlpack_info()
    Traceback (most recent call last):
    ...
    BufferError: DLPack is not supported for Evictable carrier
""",
    "Evictable.dtype": """dtype($self, /)
--

The primary's dtype.

Returns:
    DType: the element type.

Examples:
    >>> Evictable(Generic([1.0]), Generic([])).dtype()
    <DType.Floating: 'Floating'>
""",
    "Evictable.evict": """evict($self, /)
--

Moves the values to the secondary tier and releases the primary.

The destination is the current secondary if it is live and large enough, else a fresh one
from its allocate_like. The move class comes from the move registry for the exact tier
classes and runs without recording autograd. The new secondary is published only after the
move succeeded: on failure the hierarchy is as before and the call may be retried. A no-op
when already evicted; the version never changes.

Returns:
    None.

Raises:
    RuntimeError: 'Evictable carrier is owned by another carrier and cannot be modified
        directly', 'Carrier is released'.
    OSError: an I/O failure of a file tier.

Examples:
    >>> e = Evictable(Generic([1.0, 2.0]), Generic([]))
    >>> old = e.primary
    >>> e.evict()
    >>> e.is_evicted(), old.is_released(), list(e.secondary)
    (True, True, [1.0, 2.0])
""",
    "Evictable.get_value": """get_value($self, index, /)
--

Reads one element of the promoted primary.

Args:
    index: the element, 0 <= index < size().

Returns:
    Any: the value.

Raises:
    RuntimeError: 'Carrier is released', 'Evictable carrier is evicted; call promote()
        first'.
    IndexError: 'Carrier index out of range'.

Examples:
    >>> Evictable(Generic([1.5]), Generic([])).get_value(0)
    1.5
""",
    "Evictable.is_evicted": """is_evicted($self, /)
--

Whether the values are in the secondary tier.

Returns:
    bool: True after evict() until promote().

Examples:
    >>> Evictable(Generic([1.0]), Generic([])).is_evicted()
    False
""",
    "Evictable.new_like": """new_like($self, /, values, *, mutable=True, dtype=None)
--

A new hierarchy: the primary's new_like(values) over an empty secondary like this one's.

Args:
    values: an iterable of values (at least one).
    mutable: whether the new primary can be written.
    dtype: the element type; None means this carrier's.

Returns:
    Evictable: the new hierarchy.

Raises:
    ValueError: 'primary carrier must contain at least one element'.

Examples:
    >>> e = Evictable(Generic([1.0]), Generic([]))
    >>> n = e.new_like([3.0, 4.0])
    >>> list(n), n.secondary.size()
    ([3.0, 4.0], 0)
""",
    "Evictable.primary": """The current primary tier (a new object after each promotion).

Returns:
    Carrier: the primary.

Examples:
    >>> p = Generic([1.0])
    >>> Evictable(p, Generic([0.0])).primary is p
    True
""",
    "Evictable.promote": """promote($self, /)
--

Moves the values back into a fresh primary (from the released primary's allocate_like) and
releases the secondary.

The same publication rule as evict(): on failure nothing changes. A no-op when promoted; the
version never changes.

Returns:
    None.

Raises:
    RuntimeError: 'Evictable carrier is owned by another carrier and cannot be modified
        directly', 'Carrier is released'.
    OSError: an I/O failure of a file tier.

Examples:
    >>> e = Evictable(Generic([1.0, 2.0]), Generic([]))
    >>> e.evict()
    >>> e.promote()
    >>> e.is_evicted(), list(e), e.secondary.is_released()
    (False, [1.0, 2.0], True)
""",
    "Evictable.scatter": """scatter($self, /, to_scatter, scatter_onto, mapping, mapping_offset=0)
--

Scatters into the promoted primary under owner access, then bumps the hierarchy's version
once. An Evictable source is read through its primary.

Args:
    to_scatter: the source Tensor.
    scatter_onto: a Tensor backed by this carrier (its offset is used).
    mapping: a Layout of to_scatter's shape.
    mapping_offset: an offset added to every mapped index.

Returns:
    None.

Raises:
    RuntimeError: 'Carrier is not mutable', 'Carrier is released', 'Evictable carrier is
        evicted; call promote() first'.
    ValueError: 'scatter_onto must be backed by this carrier object'.
    TypeError: 'to_scatter must be a Tensor', 'mapping must be a Layout'.

Examples:
    >>> e = Evictable(Generic([0.0, 0.0]), Generic([]))
    >>> src = Tensor(Generic([5.0]), 0, Layout(Shape(1), Stride(1)))
    >>> onto = Tensor(e, 0, Layout(Shape(2), Stride(1)))
    >>> e.scatter(src, onto, Layout(Shape(1), Stride(1)), 1)
    >>> list(e), e.version
    ([0.0, 5.0], 1)
""",
    "Evictable.secondary": """The current secondary tier (replaced when an eviction needs a larger or live one).

Returns:
    Carrier: the secondary.

Examples:
    >>> s = Generic([0.0])
    >>> Evictable(Generic([1.0]), s).secondary is s
    True
""",
    "Evictable.set_value": """set_value($self, index, value, /)
--

Writes one element of the promoted primary (under owner access, so the primary's version
rises too) and bumps the hierarchy's version once.

Args:
    index: the element, 0 <= index < size().
    value: the value.

Returns:
    None.

Raises:
    RuntimeError: 'Carrier is not mutable', 'Evictable carrier is evicted; call promote()
        first'.

Examples:
    >>> e = Evictable(Generic([1.0]), Generic([]))
    >>> e.set_value(0, 4.0)
    >>> e[0], e.version, e.primary.version
    (4.0, 1, 1)
""",
    "Evictable.size": """size($self, /)
--

The element count recorded at construction; 0 after release.

Returns:
    int: the size.

Examples:
    >>> Evictable(Generic([1.0, 2.0]), Generic([])).size()
    2
""",
    "EvictableOperation": """EvictableOperation(primary_operation)
--

The operation of Evictable carriers: runs primary_operation on the tensors' primary tiers
and wraps the result back into a hierarchy.

forward lowers every Evictable tensor input to its promoted primary, stores the lowered
inputs on the primary operation, runs it by sealed lowered execution and returns the result
in an Evictable: a view stays in its input's hierarchy, fresh storage gets a new hierarchy
with an empty secondary. The adapter is the only autograd node; backward needs the saved
inputs promoted (not the result) and returns Evictable gradients. forward may run once.

Args:
    primary_operation: the Operation of the primary carrier.

Returns:
    EvictableOperation: the adapter.

Raises:
    TypeError: 'primary_operation must be an Operation'.

Examples:
    >>> e = Evictable(Generic([-1.0, 2.0]), Generic([]))
    >>> x = Tensor(e, 0, Layout(Shape(2), Stride(1)))
    >>> y = relu(x)
    >>> type(y.autograd_ctx).__name__, type(y.carrier).__name__, y[1]
    ('EvictableOperation', 'Evictable', 2.0)
    >>> y.carrier.secondary.size()
    0
""",
    "EvictableOperation.primary_operation": """The wrapped operation of the primary carrier.

Returns:
    Operation: the primary operation.

Examples:
    >>> inner = GenericReLUOperation()
    >>> EvictableOperation(inner).primary_operation is inner
    True
""",
    "BlockDevice": """BlockDevice(path)
--

A Linux block device opened with O_DIRECT, handing out extents of whole physical blocks.

BlockDevice is not a Carrier: its allocate() makes BlockDeviceCarrier objects, each one
holding Float32 values in an extent of the device. Every transfer goes through buffers
aligned to the logical block size; interrupted and short transfers are retried, and a
terminal I/O error or a transfer that makes no progress faults the whole device. One lock
per device serialises the transfers of all of its carriers.

Args:
    path: a str or os.PathLike whose __fspath__ gives str; kept exactly as given.

Returns:
    BlockDevice: the open device.

Raises:
    TypeError: 'BlockDevice path must have a string filesystem representation'.
    ValueError: 'BlockDevice path has an embedded NUL character'; '<path> is not a block
        device' for anything but a block special file (a regular file is not written).
    OSError: when the device cannot be opened (errno and filename set).

Examples:
    >>> BlockDevice("/nonexistent/disk")
    Traceback (most recent call last):
    ...
    FileNotFoundError: [Errno 2] BlockDevice cannot open /nonexistent/disk: No such file or directory: '/nonexistent/disk'
""",
    "BlockDevice.__enter__": """__enter__($self, /)
--

Returns the device itself for a with block.

Returns:
    BlockDevice: self.

Examples:
    >>> from strideweave import _native
    >>> with _native._blockdev_scripted(4096, 512, 4096) as dev:
    ...     dev.is_closed()
    False
""",
    "BlockDevice.__exit__": """__exit__($self, exc_type, exc, tb, /)
--

Closes the device; never swallows the body's exception. A close error propagates with the
body's exception as its __context__.

Args:
    exc_type: the body's exception type, or None.
    exc: the body's exception, or None.
    tb: its traceback, or None.

Returns:
    bool: False.

Examples:
    >>> from strideweave import _native
    >>> with _native._blockdev_scripted(4096, 512, 4096) as dev:
    ...     pass
    >>> dev.is_closed()
    True
""",
    "BlockDevice._attempts": """_attempts($self, /)
--

For tests: the (reads, writes, closes) system calls a scripted device has seen.

Returns:
    tuple[int, int, int]: the counts ((0, 0, 0) for a real device).

Examples:
    >>> from strideweave import _native
    >>> dev = _native._blockdev_scripted(4096, 512, 4096)
    >>> dev._attempts()
    (0, 0, 0)
""",
    "BlockDevice._carrier_count": """_carrier_count($self, /)
--

For tests: the BlockDeviceCarrier objects of the device that are not collected yet.

Returns:
    int: the count.

Examples:
    >>> from strideweave import _native
    >>> dev = _native._blockdev_scripted(4096, 512, 4096)
    >>> c = dev.allocate(2)
    >>> dev._carrier_count()
    1
""",
    "BlockDevice._read_bytes": """_read_bytes($self, offset, count, /)
--

For tests: count raw bytes at byte offset of the device.

Args:
    offset: the byte offset.
    count: the byte count.

Returns:
    bytes: what the device holds there.

Raises:
    ValueError: 'byte_offset must be non-negative', 'byte_count must be non-negative',
        'byte range exceeds the device capacity'.
    OverflowError: 'byte endpoint overflows Index'.
    RuntimeError: 'BlockDevice handle is closed'; 'faulted'; 'completed N of M bytes'.
    OSError: a terminal I/O error (the device faults).

Examples:
    >>> from strideweave import _native
    >>> _native._blockdev_scripted(4096, 512, 4096)._read_bytes(10, 3)
    b'\\x00\\x00\\x00'
""",
    "BlockDevice._write_bytes": """_write_bytes($self, offset, data, /)
--

For tests: writes raw bytes at byte offset of the device, keeping the bytes around them.

Args:
    offset: the byte offset.
    data: a bytes-like object.

Returns:
    None: nothing.

Raises:
    ValueError: as _read_bytes.
    RuntimeError: as _read_bytes.
    OSError: a terminal I/O error (the device faults).

Examples:
    >>> from strideweave import _native
    >>> dev = _native._blockdev_scripted(4096, 512, 4096)
    >>> dev._write_bytes(1, b"ab")
    >>> dev._read_bytes(0, 4)
    b'\\x00ab\\x00'
""",
    "BlockDevice._zero_fill": """_zero_fill($self, offset, count, /)
--

For tests: writes count zero bytes at byte offset of the device.

Args:
    offset: the byte offset.
    count: the byte count.

Returns:
    None: nothing.

Raises:
    ValueError: as _read_bytes.

Examples:
    >>> from strideweave import _native
    >>> dev = _native._blockdev_scripted(4096, 512, 4096)
    >>> dev._write_bytes(0, b"xyz")
    >>> dev._zero_fill(1, 1)
    >>> dev._read_bytes(0, 3)
    b'x\\x00z'
""",
    "BlockDevice.allocate": """allocate($self, /, size, *, mutable=True, dtype=DType.Float32, empty=False)
--

A new BlockDeviceCarrier of size Float32 slots in a fresh extent of the device.

The extent starts at the lowest free offset that is a multiple of allocation_alignment and
spans whole physical blocks; released extents are reused lowest first and merge with their
free neighbours. A size of 0 has offset 0 and extent 0 and reserves nothing. Unless empty,
the extent is zero-filled on the device. size is read through __index__ before the
device's lock is taken.

Args:
    size: the number of slots.
    mutable: a bool.
    dtype: DType.Float32.
    empty: a bool; True skips the zero fill.

Returns:
    BlockDeviceCarrier: the carrier.

Raises:
    TypeError: 'mutable must be a bool', 'empty must be a bool', 'dtype must be a DType'.
    ValueError: 'BlockDeviceCarrier dtype must be DType.Float32'; 'size must be
        non-negative'.
    OverflowError: 'byte length overflows'.
    MemoryError: 'BlockDevice has no aligned extent of N bytes free'.
    RuntimeError: 'BlockDevice is closed'; 'faulted'.
    OSError: the zero fill failed (the device faults; no carrier).

Examples:
    >>> from strideweave import _native
    >>> dev = _native._blockdev_scripted(8192, 512, 4096)
    >>> c = dev.allocate(3)
    >>> c.device_offset_bytes, c.extent_bytes, c.get_value(2)
    (0, 4096, 0.0)
""",
    "BlockDevice.allocation_alignment": """The alignment of extents in bytes: the physical block size.

Returns:
    int: the alignment.

Examples:
    >>> from strideweave import _native
    >>> _native._blockdev_scripted(8192, 512, 4096).allocation_alignment
    4096
""",
    "BlockDevice.capacity_bytes": """The device's size in bytes (read at opening; no I/O).

Returns:
    int: the capacity.

Examples:
    >>> from strideweave import _native
    >>> _native._blockdev_scripted(8192, 512, 4096).capacity_bytes
    8192
""",
    "BlockDevice.close": """close($self, /)
--

Closes the device. Repeated calls do nothing.

Returns:
    None: nothing.

Raises:
    RuntimeError: 'BlockDevice cannot close: a Carrier object exists' while any
        BlockDeviceCarrier object of the device exists, even a released one.
    OSError: the descriptor's close failed; the device is closed all the same.

Examples:
    >>> from strideweave import _native
    >>> dev = _native._blockdev_scripted(4096, 512, 4096)
    >>> dev.close(); dev.close()
    >>> dev.is_closed()
    True
""",
    "BlockDevice.is_closed": """is_closed($self, /)
--

Whether the device is closed.

Returns:
    bool: True once closed.

Examples:
    >>> from strideweave import _native
    >>> _native._blockdev_scripted(4096, 512, 4096).is_closed()
    False
""",
    "BlockDevice.is_faulted": """is_faulted($self, /)
--

Whether a terminal I/O error or a transfer without progress has faulted the device.

Returns:
    bool: True once faulted; then every carrier access and allocation raises RuntimeError.

Examples:
    >>> from strideweave import _native
    >>> dev = _native._blockdev_scripted(4096, 512, 4096, write_script=[("error", 5)])
    >>> dev.allocate(1)
    Traceback (most recent call last):
    ...
    OSError: [Errno 5] BlockDevice write failed after 0 of 4096 bytes: Input/output error
    >>> dev.is_faulted()
    True
""",
    "BlockDevice.logical_block_size": """The device's logical block size in bytes (no I/O).

Returns:
    int: the size.

Examples:
    >>> from strideweave import _native
    >>> _native._blockdev_scripted(8192, 512, 4096).logical_block_size
    512
""",
    "BlockDevice.path": """The path exactly as given to BlockDevice (None for a device found through a carrier
whose device object had gone).

Returns:
    str | os.PathLike | None: the path.

Examples:
    >>> from strideweave import _native
    >>> _native._blockdev_scripted(4096, 512, 4096, path="/dev/test").path
    '/dev/test'
""",
    "BlockDevice.physical_block_size": """The device's physical block size in bytes (no I/O).

Returns:
    int: the size.

Examples:
    >>> from strideweave import _native
    >>> _native._blockdev_scripted(8192, 512, 4096).physical_block_size
    4096
""",
    "BlockDeviceCarrier": """Float32 values in one extent of a BlockDevice: storage only, of fixed size.

Made only by BlockDevice.allocate (and allocate_like and new_like). Each scalar access is
one device transfer; a write's version step comes as its transfer starts, so a write that
fails still counts. The carrier supports no operation and no DLPack export; it moves only
to and from CPU, through the exact built-in bulk moves.

Returns:
    BlockDeviceCarrier: not constructible directly.

Raises:
    TypeError: 'BlockDeviceCarrier cannot be created directly: use BlockDevice.allocate'.

Examples:
    >>> BlockDeviceCarrier()
    Traceback (most recent call last):
    ...
    TypeError: BlockDeviceCarrier cannot be created directly: use BlockDevice.allocate
""",
    "BlockDeviceCarrier.allocate_like": """allocate_like($self, /, size, *, mutable=True, dtype=None, empty=False)
--

A new carrier in a fresh extent of the same device (also from a released carrier).

Args:
    size: the number of slots.
    mutable: whether the new carrier accepts writes.
    dtype: None or DType.Float32.
    empty: True skips the zero fill.

Returns:
    BlockDeviceCarrier: the new carrier.

Raises:
    ValueError: 'BlockDeviceCarrier allocation size must be non-negative'.
    MemoryError: 'no aligned extent'.

Examples:
    >>> from strideweave import _native
    >>> c = _native._blockdev_scripted(8192, 512, 4096).allocate(1)
    >>> c.allocate_like(2).device_offset_bytes
    4096
""",
    "BlockDeviceCarrier.device": """The BlockDevice the carrier lives on (a strong reference, kept after release).

Returns:
    BlockDevice: the device.

Examples:
    >>> from strideweave import _native
    >>> dev = _native._blockdev_scripted(4096, 512, 4096)
    >>> dev.allocate(1).device is dev
    True
""",
    "BlockDeviceCarrier.device_offset_bytes": """The extent's byte offset on the device (0 after release).

Returns:
    int: the offset.

Examples:
    >>> from strideweave import _native
    >>> _native._blockdev_scripted(4096, 512, 4096).allocate(1).device_offset_bytes
    0
""",
    "BlockDeviceCarrier.dtype": """dtype($self, /)
--

The element dtype: always DType.Float32.

Returns:
    DType: DType.Float32.

Examples:
    >>> from strideweave import _native
    >>> _native._blockdev_scripted(4096, 512, 4096).allocate(1).dtype() is DType.Float32
    True
""",
    "BlockDeviceCarrier.extent_bytes": """The extent's length in bytes, whole physical blocks (0 after release).

Returns:
    int: the length.

Examples:
    >>> from strideweave import _native
    >>> _native._blockdev_scripted(8192, 512, 4096).allocate(1025).extent_bytes
    8192
""",
    "BlockDeviceCarrier.get_value": """get_value($self, index, /)
--

Reads slot index from the device (one transfer).

Args:
    index: the slot.

Returns:
    float: the value, a 32-bit float.

Raises:
    IndexError: 'Carrier index out of range'.
    RuntimeError: 'Carrier is released'; 'faulted'.

Examples:
    >>> from strideweave import _native
    >>> c = _native._blockdev_scripted(4096, 512, 4096).allocate(2)
    >>> c.set_value(0, 1.1)
    >>> c.get_value(0)
    1.100000023841858
""",
    "BlockDeviceCarrier.new_like": """new_like($self, /, values, *, mutable=True, dtype=None)
--

A new carrier on the same device holding values (None entries are 0.0), converted before
the device's lock is taken.

Args:
    values: an iterable of numbers or None.
    mutable: whether the new carrier accepts writes.
    dtype: None or DType.Float32.

Returns:
    BlockDeviceCarrier: the new carrier, version 0.

Examples:
    >>> from strideweave import _native
    >>> c = _native._blockdev_scripted(8192, 512, 4096).allocate(1)
    >>> list(c.new_like([1.5, None]))
    [1.5, 0.0]
""",
    "BlockDeviceCarrier.scatter": """scatter($self, /, to_scatter, scatter_onto, mapping, mapping_offset=0)
--

Not supported: BlockDeviceCarrier is storage only.

Args:
    to_scatter: ignored.
    scatter_onto: ignored.
    mapping: ignored.
    mapping_offset: ignored.

Returns:
    None: never returns.

Raises:
    NotImplementedError: 'BlockDeviceCarrier carriers do not support scatter'.

Examples:
    >>> from strideweave import _native
    >>> _native._blockdev_scripted(4096, 512, 4096).allocate(1).scatter(None, None, None)
    Traceback (most recent call last):
    ...
    NotImplementedError: BlockDeviceCarrier carriers do not support scatter
""",
    "BlockDeviceCarrier.set_value": """set_value($self, index, value, /)
--

Writes slot index on the device (one transfer), as a 32-bit float. Bounds and mutability
are checked before any I/O; the value's __float__ runs before the device's lock is taken.

Args:
    index: the slot.
    value: a number.

Returns:
    None: nothing.

Raises:
    IndexError: 'Carrier index out of range'.
    RuntimeError: 'Carrier is not mutable'; 'faulted'; 'completed N of 4 bytes'.
    OSError: a terminal I/O error (the device faults; the version still rose).

Examples:
    >>> from strideweave import _native
    >>> c = _native._blockdev_scripted(4096, 512, 4096).allocate(2)
    >>> c.set_value(1, 2)
    >>> c.get_value(1), c.version
    (2.0, 1)
""",
    "BlockDeviceCarrier.size": """size($self, /)
--

The number of slots (0 after release).

Returns:
    int: the size.

Examples:
    >>> from strideweave import _native
    >>> _native._blockdev_scripted(4096, 512, 4096).allocate(3).size()
    3
""",
    "BlockDeviceToCpuMoveOperation": """BlockDeviceToCpuMoveOperation()
--

The bulk move from BlockDeviceCarrier to CPU: one device transfer of the layout's whole
physical span, holes included, to the destination from slot 0.

Pinned to exactly BlockDeviceCarrier sources and CPU destinations; the destination's
version rises by one, also when the transfer fails (the completed prefix stays). The pair
is a protected built-in of the move registry.

Returns:
    BlockDeviceToCpuMoveOperation: the operation.

Examples:
    >>> from strideweave import CPU, BlockDeviceCarrier
    >>> BlockDeviceToCpuMoveOperation.source_class is BlockDeviceCarrier
    True
""",
    "CpuToBlockDeviceMoveOperation": """CpuToBlockDeviceMoveOperation()
--

The bulk move from CPU to BlockDeviceCarrier: one device transfer of the layout's whole
physical span, holes included, from the tensor's offset to the destination's slot 0.

Pinned to exactly CPU sources and BlockDeviceCarrier destinations; the destination cannot
grow ('too small' before any I/O) and its version rises by one. The pair is a protected
built-in of the move registry.

Returns:
    CpuToBlockDeviceMoveOperation: the operation.

Examples:
    >>> from strideweave import CPU, BlockDeviceCarrier
    >>> CpuToBlockDeviceMoveOperation.destination_class is BlockDeviceCarrier
    True
""",
    "_blockdev_scripted": """_blockdev_scripted(capacity, logical, physical, *, read_script=(), write_script=(), close_error=0, path='<scripted>')
--

For tests: a BlockDevice backed by memory whose system calls follow scripts.

The n-th read call takes read_script[n] and the n-th write call write_script[n]; once a
script runs out, calls move everything asked. Steps: ("interrupt", 0) fails with EINTR,
("progress", n) moves at most n bytes, ("zero", 0) moves nothing, ("error", errno) fails.

Args:
    capacity: the size in bytes.
    logical: the logical block size.
    physical: the physical block size.
    read_script: the read steps.
    write_script: the write steps.
    close_error: an errno the close returns (0: none).
    path: what the path property reports.

Returns:
    BlockDevice: the device.

Raises:
    ValueError: 'capacity must be positive', 'logical block size must be positive',
        'physical block size must be positive', 'capacity must be a multiple ...',
        'physical block size must be a multiple ...', 'unknown script step'.

Examples:
    >>> from strideweave import _native
    >>> dev = _native._blockdev_scripted(4096, 512, 4096, write_script=[("interrupt", 0)])
    >>> c = dev.allocate(1)
    >>> dev._attempts()
    (0, 2, 0)
""",
    "FileBacked": """FileBacked(filename=None, *, mutable=True, dtype=DType.Floating)
--

Raw numeric values in a binary file, in native byte order.

Floating values are 8-byte doubles, Float32 and Int32 values 4 bytes. A new carrier has size
0; _allocate and allocate_like make room (zero-filled). Elements are read and written in the
file directly, so memory use does not grow with the file. With no filename the file is a
private temporary without a name in the file system, gone on release, on garbage collection
and however the process ends. A filename is a path that is created exclusively (empty,
reserving the name), made absolute and kept; a move that grows the empty file shows its
values under the name only once they are all written. I/O failures raise OSError and leave
the carrier and its values as they were. For storage and movement only: FileBacked carriers
run no computation.

Args:
    filename: None, or the path of a file to create (str, bytes or os.PathLike).
    mutable: whether the carrier can be written.
    dtype: DType.Floating, DType.Float32 or DType.Int32.

Returns:
    FileBacked: the carrier.

Raises:
    TypeError: 'FileBacked dtype must be a DType'.
    ValueError: 'FileBacked dtype must be DType.Floating, DType.Float32, or DType.Int32'.
    FileExistsError: the file exists already.
    OSError: the file cannot be created.

Examples:
    >>> f = FileBacked(dtype=DType.Int32)
    >>> f.size()
    0
    >>> f._allocate(3)
    >>> f[2] = 7
    >>> list(f), f.size()
    ([0, 0, 7], 3)
    >>> f.path.exists()
    False
""",
    "FileBacked.open": """open(path, *, dtype=DType.Floating, mutable=False, offset=None, size=None)
--

Opens an existing raw file as a FileBacked carrier, beside the constructor (which always
creates its file): the size is the file's length over the dtype's item size and the values
are its bytes in native order. With mutable=True writes go to the file. The file is kept
after release and never removed.

With offset or size, the carrier is a window of the file: size elements (default: the
whole elements up to the end) whose first one is at byte offset (default 0). The rest of
the file is never read or written, and a window's size is fixed (it cannot be resized,
so it does not grow as a move's destination). ``sw.load(path, file_backed=True)`` opens
the tensors of a safetensors file this way.

Args:
    path: the file (str, bytes or os.PathLike).
    dtype: DType.Floating (8-byte floats), DType.Float32 or DType.Int32.
    mutable: whether the carrier may be written (the file is opened read-write).
    offset: the byte offset of a window's first element, an int >= 0, or None.
    size: a window's element count, an int >= 0, or None.

Returns:
    FileBacked: the carrier.

Raises:
    TypeError: an offset or size that is not an int.
    ValueError: another dtype, a path that is not a regular file, a length that is not a
        multiple of the item size, a negative offset or size, or a window that passes the
        end of the file.
    FileNotFoundError: no such file (OSError for other failures).

Examples:
    >>> import os, struct, tempfile
    >>> from strideweave import DType, FileBacked
    >>> path = os.path.join(tempfile.mkdtemp(), "raw.bin")
    >>> with open(path, "wb") as f:
    ...     _ = f.write(bytes(8))
    >>> c = FileBacked.open(path, dtype=DType.Float32)
    >>> c.size(), c[1], c.is_mutable()
    (2, 0.0, False)
    >>> with open(path, "wb") as f:
    ...     _ = f.write(b"head" + struct.pack("<2f", 1.5, 2.5))
    >>> w = FileBacked.open(path, dtype=DType.Float32, offset=4)
    >>> w.size(), w[0], w[1]
    (2, 1.5, 2.5)
""",
    "FileBacked._allocate": """_allocate($self, size, /)
--

Truncates or extends the file to size elements (new ones are zero).

Args:
    size: the element count, >= 0.

Returns:
    None.

Raises:
    ValueError: 'FileBacked allocation size must be non-negative'.
    RuntimeError: 'Carrier is released'.

Examples:
    >>> f = FileBacked()
    >>> f._allocate(2)
    >>> f.size()
    2
""",
    "FileBacked.allocate_like": """allocate_like($self, /, size, *, mutable=True, dtype=None, empty=False)
--

A new temporary FileBacked of size zero elements.

Args:
    size: the element count, >= 0.
    mutable: whether the new carrier can be written.
    dtype: the element type; None means this carrier's.
    empty: ignored (files are zero-filled).

Returns:
    FileBacked: the new carrier.

Raises:
    ValueError: 'FileBacked allocation size must be non-negative'.

Examples:
    >>> FileBacked().allocate_like(4).size()
    4
""",
    "FileBacked.dtype": """dtype($self, /)
--

The element type.

Returns:
    DType: Floating, Float32 or Int32.

Examples:
    >>> FileBacked().dtype()
    <DType.Floating: 'Floating'>
""",
    "FileBacked.get_value": """get_value($self, index, /)
--

Reads one element from the file.

Args:
    index: the element, 0 <= index < size().

Returns:
    float | int: the value (Float32 values widened to double).

Raises:
    RuntimeError: 'Carrier is released'.
    IndexError: 'Carrier index out of range'.
    OSError: the read failed.

Examples:
    >>> f = FileBacked()
    >>> f._allocate(1)
    >>> f.get_value(0)
    0.0
""",
    "FileBacked.new_like": """new_like($self, /, values, *, mutable=True, dtype=None)
--

A new temporary FileBacked holding values (None entries are zero; exact FileBacked only).

Args:
    values: an iterable of numbers or None.
    mutable: whether the new carrier can be written.
    dtype: the element type; None means this carrier's.

Returns:
    FileBacked: the new carrier.

Raises:
    NotImplementedError: 'FileBacked carrier factory only supports exact FileBacked
        carriers' on a subclass.

Examples:
    >>> list(FileBacked().new_like([1, None, 2.5]))
    [1.0, 0.0, 2.5]
""",
    "FileBacked.path": """The file's absolute path.

A temporary has no name in the file system; its path is the directory it lives in joined
with strideweave-<pid>-<n>, a name that does not exist.

Returns:
    pathlib.Path: the path (resolved at construction).

Examples:
    >>> FileBacked().path.is_absolute()
    True
""",
    "FileBacked.scatter": """scatter($self, /, to_scatter, scatter_onto, mapping, mapping_offset=0)
--

Not supported: FileBacked carriers are for storage and movement.

Args:
    to_scatter: ignored.
    scatter_onto: ignored.
    mapping: ignored.
    mapping_offset: ignored.

Returns:
    None: never returns.

Raises:
    NotImplementedError: 'FileBacked carriers do not support scatter'.

Examples:
    >>> FileBacked().scatter(None, None, None)
    Traceback (most recent call last):
    ...
    NotImplementedError: FileBacked carriers do not support scatter
""",
    "FileBacked.set_value": """set_value($self, index, value, /)
--

Writes one element to the file and bumps the version.

Args:
    index: the element, 0 <= index < size().
    value: a number (an integer for Int32).

Returns:
    None.

Raises:
    RuntimeError: 'Carrier is not mutable', 'Carrier is released'.
    IndexError: 'Carrier index out of range'.
    TypeError: 'FileBacked value must be a number', 'FileBacked value must be an integer'.
    OverflowError: 'FileBacked value is out of int32 range'.
    OSError: the write failed; the element is unchanged.

Examples:
    >>> f = FileBacked(dtype=DType.Float32)
    >>> f._allocate(1)
    >>> f.set_value(0, 0.1)
    >>> f[0], f.version
    (0.10000000149011612, 1)
""",
    "FileBacked.size": """size($self, /)
--

The number of elements in the file, read from the file on each call; 0 after release.

Returns:
    int: the file size divided by the item size.

Examples:
    >>> FileBacked().size()
    0
""",
    "FileBackedToCpuMoveOperation": """FileBackedToCpuMoveOperation()
--

The bulk move from FileBacked to CPU: the layout's whole physical span read from the file in
large pieces.

Pinned to exactly FileBacked sources and CPU destinations; the destination's version is
unchanged.

Returns:
    FileBackedToCpuMoveOperation: the operation.

Examples:
    >>> from strideweave import CPU, FileBacked
    >>> FileBackedToCpuMoveOperation.destination_class is CPU
    True
""",
    "Generic": """Generic(values, *, mutable=True, dtype=DType.Floating)
--

A carrier of Python objects.

A mutable carrier stores any object with __len__, __getitem__ and __setitem__ as it is (a
list is an alias: changes show through both ways); an immutable one any object with __len__
and __getitem__ (tuples, ranges, str). Anything else is materialised with list(values),
consuming one-pass iterators. Values are not checked against the dtype: Floating values are
meant to be differentiable numbers, Any values are arbitrary objects.

Args:
    values: an iterable of the elements.
    mutable: whether the carrier can be written (normalised with bool()).
    dtype: DType.Floating or DType.Any.

Returns:
    Generic: the carrier.

Raises:
    TypeError: 'Generic requires an iterable object', 'Generic dtype must be a DType'.
    ValueError: 'Generic dtype must be DType.Any or DType.Floating'.

Examples:
    >>> values = [1.0, 2.0]
    >>> g = Generic(values)
    >>> g[0] = 5.0
    >>> values, g.version
    ([5.0, 2.0], 1)
    >>> Generic(range(3), mutable=False, dtype=DType.Any)[2]
    2
""",
    "Generic._dispatch_op": """_dispatch_op($self, name, /)
--

A fresh operation from the Generic table (a hook: subclasses may override it and reach this
table through super()).

Args:
    name: the canonical operation name.

Returns:
    Operation: a fresh, undispatched operation.

Raises:
    NotImplementedError: "Generic carrier does not support operation '<name>'".

Examples:
    >>> type(Generic([])._dispatch_op('add')).__name__
    'GenericAddOperation'
""",
    "Generic.allocate_like": """allocate_like($self, /, size, *, mutable=True, dtype=None, empty=False)
--

A plain Generic of size Nones (also for subclasses; empty is ignored).

Args:
    size: the element count, >= 0.
    mutable: whether the new carrier can be written.
    dtype: DType.Floating or DType.Any; None means this carrier's.
    empty: ignored.

Returns:
    Generic: the new carrier.

Raises:
    ValueError: 'Generic allocation size must be non-negative'.

Examples:
    >>> list(Generic([]).allocate_like(2))
    [None, None]
""",
    "Generic.dtype": """dtype($self, /)
--

The element type.

Returns:
    DType: Floating or Any.

Examples:
    >>> Generic([]).dtype()
    <DType.Floating: 'Floating'>
""",
    "Generic.get_value": """get_value($self, index, /)
--

store[index], with Python's indexing rules (-1 is the last element); carrier[i] adds the
base checks.

Args:
    index: the store index.

Returns:
    object: the element.

Raises:
    RuntimeError: 'Carrier is released'.

Examples:
    >>> Generic([1, 2, 3]).get_value(-1)
    3
""",
    "Generic.new_like": """new_like($self, /, values, *, mutable=True, dtype=None)
--

A new Generic holding the values in a new list (exact Generic only; works after release).

Args:
    values: an iterable of the elements.
    mutable: whether the new carrier can be written.
    dtype: DType.Floating or DType.Any; None means this carrier's.

Returns:
    Generic: the new carrier.

Raises:
    NotImplementedError: 'Generic carrier factory only supports exact Generic carriers' on a
        subclass.

Examples:
    >>> list(Generic([]).new_like((1, None)))
    [1, None]
""",
    "Generic.scatter": """scatter($self, /, to_scatter, scatter_onto, mapping, mapping_offset=0)
--

self[scatter_onto.offset + mapping_offset + mapping(i)] = to_scatter[i] for every logical i;
the version rises once per element.

Args:
    to_scatter: the source Tensor (any carrier).
    scatter_onto: a Tensor over this carrier; only its offset is used.
    mapping: a Layout with the shape of to_scatter's layout.
    mapping_offset: added to every destination index, >= 0.

Returns:
    None.

Raises:
    RuntimeError: 'Carrier is not mutable'.
    TypeError: 'to_scatter must be a Tensor', 'scatter_onto must be a Tensor', 'mapping must
        be a Layout'.
    ValueError: 'scatter_onto must be backed by this carrier', 'mapping shape must match
        to_scatter layout shape', 'mapping_offset must be non-negative', 'scatter mapping
        exceeds destination carrier size'.

Examples:
    >>> g = Generic([0, 0, 0])
    >>> src = Tensor(Generic(['a', 'b']), 0, Layout(Shape(2), Stride(1)))
    >>> g.scatter(src, Tensor(g, 0, Layout(Shape(3), Stride(1))), Layout(Shape(2), Stride(2)))
    >>> list(g), g.version
    (['a', 0, 'b'], 2)
""",
    "Generic.set_value": """set_value($self, index, value, /)
--

store[index] = value with Python's indexing rules, then one version bump.

Args:
    index: the store index (negative counts from the end).
    value: any object.

Returns:
    None.

Raises:
    RuntimeError: 'Carrier is not mutable', 'Carrier is released'.

Examples:
    >>> g = Generic([1, 2])
    >>> g.set_value(-1, 'x')
    >>> g[1], g.version
    ('x', 1)
""",
    "Generic.size": """size($self, /)
--

len() of the store.

Returns:
    int: the element count.

Raises:
    RuntimeError: 'Carrier is released'.

Examples:
    >>> Generic('abc').size()
    3
""",
    "Layout": """Layout(shape, stride)
--

A CuTe-style layout: a function from logical coordinates to indices.

A layout pairs a Shape with a congruent Stride. Index i of the logical domain is split
colexicographically (the first mode varies fastest, at every level) and mapped to
sum(coordinate * stride). Layouts are immutable values; str() and repr() give the CuTe form
shape:stride.

Args:
    shape: the extents, a Shape.
    stride: the strides, a Stride of the same structure.

Returns:
    Layout: the new layout.

Raises:
    ValueError: 'shape input must be a Shape object', 'stride input must be a Stride
        object', 'Shape and Stride do not match in Structure', or a cosize that does not fit
        in 64 bits.

Examples:
    >>> L = Layout(Shape([2, [3, 4]]), Stride([1, [10, 100]]))
    >>> L
    (2,(3,4)):(1,(10,100))
    >>> L.size, L.cosize, L(23), L([1, [2, 3]])
    (24, 322, 321, 321)
""",
    "Layout.__copy__": """__copy__($self, /)
--

A new Layout equal to this one.""",
    "Layout.__deepcopy__": """__deepcopy__($self, memo, /)
--

A new Layout equal to this one.""",
    "Layout.__reduce__": """__reduce__($self, /)
--

Pickling support: rebuilds an equal value.""",
    "Layout.append": """append($self, other, /)
--

Appends other: concatenated if it is one flat mode (or empty), else one new nested mode.

Args:
    other: the layout to append.

Returns:
    Layout: the joined layout.

Examples:
    >>> B = Layout(Shape([2, 3]), Stride([2, 6]))
    >>> Layout.append(Layout.leaf(1, 1), B)
    (1,(2,3)):(1,(2,6))
""",
    "Layout.blocked_product": """blocked_product($self, B, /)
--

The product with mode i = (self[i], P[i]), P the repetition of B; ranks are padded with 1:0.

Args:
    B: the block arrangement.

Returns:
    Layout: the blocked product.

Examples:
    >>> A = Layout(Shape([2, 5]), Stride([5, 1]))
    >>> A.blocked_product(Layout(Shape([3, 4]), Stride([1, 3]))).size
    120
""",
    "Layout.check_tree": """check_tree($cls, shape_level, stride_level, /)
--

Whether two trees have the same structure.

Args:
    shape_level: a Shape or a Shape input (e.g. top_level).
    stride_level: a Stride or a Stride input.

Returns:
    bool: True if both have the same nesting everywhere.

Examples:
    >>> Layout.check_tree((2, (3, 4)), (1, (2, 6)))
    True
""",
    "Layout.choose": """choose($self, d, /)
--

The layout C with C(j) == self(d*j): CuTe's shape division.

Args:
    d: the step; must divide the size.

Returns:
    Layout: the divided layout (flat leaves), of size
    self.size // d.

Raises:
    ValueError: when d is not positive, does not divide the
        size or the leading extents in turn, or a stride
        overflows.

Examples:
    >>> L = Layout(Shape([3, 6, 2, 8]), Stride([1, 3, 18, 36]))
    >>> L.choose(9)(1) == L(9)
    True
""",
    "Layout.coalesce": """coalesce($self, /)
--

The flat layout of the fewest modes with the same function.

Extent-1 leaves are dropped and neighbours with stride[k+1] == extent[k]*stride[k] merge. A
layout of one leaf is returned unchanged.

Returns:
    Layout: the coalesced layout.

Examples:
    >>> Layout(Shape([2, [1, 6]]), Stride([1, [6, 2]])).coalesce()
    12:1
""",
    "Layout.coalesce_by_mode": """coalesce_by_mode($self, profile, /)
--

Coalesces each mode selected by a profile tree.

Args:
    profile: a Tree; a leaf marker coalesces that whole mode, a subtree recurses into it.

Returns:
    Layout: the result, shaped like the profile.

Raises:
    ValueError: 'layout and tree profile do not match'.

Examples:
    >>> L = Layout(Shape([2, [1, 6]]), Stride([1, [6, 2]]))
    >>> L.coalesce_by_mode(Tree(1, 1))
    (2,6):(1,2)
""",
    "Layout.complement": """complement($self, /, cotarget=None)
--

The ordered layout that completes self to cover cotarget.

(self, complement) is injective and has cosize cotarget; the complement's strides increase.
Extent-1 and stride-0 leaves are ignored; the result is 1:0 when nothing is left.

Args:
    cotarget: the size to cover; by default only the gaps between self's modes are filled
        (the result has no mode beyond self's span).

Returns:
    Layout: the complement.

Raises:
    ValueError: self overlaps itself, its strides cannot be completed evenly, or cotarget is
        not a multiple of its span.

Examples:
    >>> Layout.leaf(4, 2).complement(24)
    (2,3):(1,8)
    >>> Layout.leaf(4, 2).complement()
    2:1
""",
    "Layout.compose": """compose($self, B, /)
--

Composition with a Layout, a Shape or a tiler.

A Layout composes as compose_layouts. A Shape becomes the tiler of compact column-major
layouts of its modes. A tiler (a sequence of Layouts) composes mode i of self with tiler[i];
the remaining modes follow unchanged.

Args:
    B: a Layout, a Shape or a sequence of Layouts.

Returns:
    Layout: the composition.

Raises:
    ValueError: inadmissible strides or extents, or a tiler longer than the rank.

Examples:
    >>> A = Layout(Shape([20, 50]), Stride([1, 20]))
    >>> A.compose(Shape([5, 2]))
    (5,2):(1,20)
""",
    "Layout.compose_layouts": """compose_layouts($self, B, /)
--

The composition self o B: R(c) == self(B(c)), with B's modes.

Args:
    B: the inner layout.

Returns:
    Layout: the composition.

Raises:
    ValueError: when a stride or extent of B does not divide self's modes.

Examples:
    >>> Layout.leaf(20, 2).compose_layouts(Layout(Shape([5, 4]), Stride([4, 1])))
    (5,4):(8,2)
""",
    "Layout.concat": """concat($self, other, /)
--

The modes of self followed by the modes of other (also self + other).

Args:
    other: the layout whose modes follow.

Returns:
    Layout: the joined layout.

Examples:
    >>> Layout.concat(Layout.leaf(2, 1), Layout.leaf(3, 2))
    (2,3):(1,2)
""",
    "Layout.cosize": """One past the largest index: 1 + sum of stride*(extent-1).

The storage a carrier must provide for the layout.

Returns:
    int: the cosize (1 for the empty layout).

Examples:
    >>> Layout(Shape([2, 3]), Stride([1, 4])).cosize
    10
""",
    "Layout.depth": """Nesting depth of the shape: 1 for a flat layout.

Returns:
    int: the depth.

Examples:
    >>> Layout(Shape([2, [3, 4]]), Stride([1, [2, 6]])).depth
    2
""",
    "Layout.divide": """divide($self, B, /)
--

Logical divide self / B = self o (B, complement(B, size)).

Args:
    B: the tile layout.

Returns:
    Layout: two modes, the tile and the rest.

Raises:
    ValueError: when B does not tile self.

Examples:
    >>> Layout.leaf(24, 1).divide(Layout.leaf(4, 2))
    (4,(2,3)):(2,(1,8))
""",
    "Layout.divide_tiler": """divide_tiler($self, tiler, /)
--

Divides the leading modes: mode i becomes self[i] / tiler[i].

Args:
    tiler: a sequence of Layouts, at most rank of them.

Returns:
    Layout: ((tile_0, rest_0), ..., remaining modes).

Examples:
    >>> A = Layout(Shape([9, [4, 8]]), Stride([59, [13, 1]]))
    >>> T = [Layout.leaf(3, 3), Layout(Shape([2, 4]), Stride([1, 8]))]
    >>> A.divide_tiler(T)
    ((3,3),((2,4),(2,2))):((177,59),((13,2),(26,1)))
""",
    "Layout.empty": """empty($cls, /)
--

The empty layout ():(), of size 1 and cosize 1.

Returns:
    Layout: the layout with no modes.

Examples:
    >>> Layout.empty().size
    1
""",
    "Layout.expand_int": """expand_int($cls, key, shape_level, /)
--

Splits a logical index into top-level coordinates, first mode fastest.

Args:
    key: the logical index.
    shape_level: a Shape or a Shape input.

Returns:
    list[int]: one coordinate per top-level mode.

Raises:
    ValueError: 'Key is not in domain of shape'.

Examples:
    >>> Layout.expand_int(5, (2, (3, 4)))
    [1, 2]
""",
    "Layout.extract_profile": """extract_profile($self, /, profile=None)
--

Splits the layout into pieces along a profile.

Args:
    profile: a Tree, or None for every leaf. A leaf marker takes the whole corresponding
        mode; a subtree recurses.

Returns:
    list[Layout]: the pieces in order.

Raises:
    ValueError: 'layout and tree profile do not match'.

Examples:
    >>> L = Layout(Shape([2, [3, 4]]), Stride([1, [2, 6]]))
    >>> L.extract_profile(Tree(1, 1))
    [2:1, (3,4):(2,6)]
""",
    "Layout.filter": """filter($self, /)
--

Drops stride-0 and extent-1 leaves, then coalesces (1:0 if nothing is left).

Returns:
    Layout: a layout whose size counts the distinct indices reached.

Examples:
    >>> Layout(Shape([2, 3, 4]), Stride([0, 1, 3])).filter()
    12:1
""",
    "Layout.flat_divide": """flat_divide($self, tiler, /)
--

The tiler divide as (tile_0, ..., rest_0, ..., remaining modes...).

Args:
    tiler: a sequence of Layouts.

Returns:
    Layout: the tiles and rests as top-level modes.

Examples:
    >>> A = Layout(Shape([9, [4, 8]]), Stride([59, [13, 1]]))
    >>> T = [Layout.leaf(3, 3), Layout(Shape([2, 4]), Stride([1, 8]))]
    >>> A.flat_divide(T)
    (3,(2,4),3,(2,2)):(177,(13,2),59,(26,1))
""",
    "Layout.flatten": """flatten($self, /)
--

All leaves as top-level modes, in infix order.

Returns:
    Layout: the flat layout with the same function.

Examples:
    >>> Layout(Shape([2, [3, 4]]), Stride([1, [2, 6]])).flatten()
    (2,3,4):(1,2,6)
""",
    "Layout.flatten_layout": """flatten_layout($self, /)
--

The flattened layout and the recipe of the original nesting.

Returns:
    tuple[Layout, list[Node]]: the flat layout, and the pre-order Leaf/Push/Pop recipe of
        the shape.

Examples:
    >>> L = Layout(Shape([2, [3, 4]]), Stride([1, [2, 6]]))
    >>> flat, recipe = L.flatten_layout()
    >>> flat, [n.name for n in recipe]
    ((2,3,4):(1,2,6), ['Leaf', 'Push', 'Leaf', 'Leaf', 'Pop'])
""",
    "Layout.get_index": """get_index($cls, layout, key, /)
--

The index of key in layout (see Layout.index).

Args:
    layout: the layout.
    key: an int or a (nested) sequence of ints.

Returns:
    int: the index.

Raises:
    ValueError: 'layout input must be a Layout object', or a key out of the domain.

Examples:
    >>> Layout.get_index(Layout.leaf(4, 3), 2)
    6
""",
    "Layout._repr_svg_": """_repr_svg_($self, /)
--

The layout's index map as an SVG picture, for Jupyter (strideweave.viz.layout_svg), or None
for a rank above 2 or more than viz.REPR_LIMIT elements.

Returns:
    str | None: the SVG document.
""",
    "Layout.index": """index($self, key, /)
--

The index of a logical element; layout(key) is the same.

An int key is a logical index in [0, size), split colexicographically. A sequence key pairs
its coordinates with the top-level modes: missing trailing coordinates count as 0 and extra
ones are ignored; a leaf mode takes an int in [0, extent), a nested mode an int (its logical
index) or a nested sequence.

Args:
    key: an int, or a (nested) sequence of ints.

Returns:
    int: the index, relative to 0.

Raises:
    ValueError: 'Key is not in domain of shape' for an out-of-range or negative coordinate.
    TypeError: a key or coordinate that is neither an int nor a sequence.

Examples:
    >>> L = Layout(Shape([3, 4]), Stride([2, 10]))
    >>> L.index([2, 3]), L.index(5), L.index([1])
    (34, 14, 2)
""",
    "Layout.infix": """infix($self, /)
--

The (extent, stride) pairs of the leaves, depth-first.

Returns:
    list[tuple[int, int]]: one pair per leaf.

Examples:
    >>> Layout(Shape([2, [3, 4]]), Stride([1, [2, 6]])).infix()
    [(2, 1), (3, 2), (4, 6)]
""",
    "Layout.is_compact": """is_compact($self, /)
--

Whether the layout is a bijection onto range(size).

Returns:
    bool: True if compact.

Examples:
    >>> Layout(Shape([2, 3]), Stride([3, 1])).is_compact()
    True
""",
    "Layout.is_injective": """is_injective($self, /)
--

Whether no two coordinates share an index.

Returns:
    bool: True if the layout is one-to-one.

Examples:
    >>> Layout(Shape([2, 2]), Stride([1, 1])).is_injective()
    False
""",
    "Layout.is_leaf": """True for at most one top-level mode that is an integer.

Returns:
    bool: whether shape and stride are both is_int.

Examples:
    >>> Layout.leaf(4, 1).is_leaf, Layout.empty().is_leaf
    (True, True)
""",
    "Layout.leaf": """leaf($cls, s, d, /)
--

Layout(Shape(s), Stride(d)); for ints, the one-mode layout s:d.

Args:
    s: the extent (or any Shape input).
    d: the stride (or any Stride input).

Returns:
    Layout: the layout.

Examples:
    >>> Layout.leaf(4, 2)
    4:2
""",
    "Layout.left_inverse": """left_inverse($self, /)
--

L with L(self(i)) == i for every i < size, for injective self.

Returns:
    Layout: the left inverse.

Raises:
    ValueError: self is not injective.

Examples:
    >>> L = Layout.leaf(4, 2)
    >>> [L.left_inverse()(L(i)) for i in range(4)]
    [0, 1, 2, 3]
""",
    "Layout.logical_product": """logical_product($self, B, /)
--

self x B = (self, complement(self, size*cosize(B)) o B): self repeated in the pattern of B.

Args:
    B: the repetition layout.

Returns:
    Layout: two modes, self and the repetition.

Examples:
    >>> A = Layout(Shape([2, 2]), Stride([4, 1]))
    >>> A.logical_product(Layout.leaf(6, 1)).size
    24
""",
    "Layout.make_layout": """make_layout($cls, /, *layouts)
--

Appends each layout in turn to the empty layout.

Args:
    *layouts: the layouts, one mode each (nested if needed).

Returns:
    Layout: the combined layout.

Raises:
    ValueError: 'function make_layout only accepts Layouts as argument'.

Examples:
    >>> Layout.make_layout(Layout.leaf(2, 1), Layout.leaf(3, 2))
    (2,3):(1,2)
""",
    "Layout.modout": """modout($self, s, /)
--

Keeps the first s elements of the layout.

Args:
    s: the number of elements to keep.

Returns:
    Layout: a layout of size min(s, self.size) agreeing with
    self on its domain (flat leaves, self's strides); a
    layout of at most s elements comes back whole.

Raises:
    ValueError: when s is not positive or does not split the
        modes evenly.

Examples:
    >>> Layout(Shape([2, 2, 8]), Stride([9, 18, 36])).modout(8).size
    8
""",
    "Layout.permute": """permute($self, /, *order)
--

Reorders the top-level modes: mode k of the result is mode order[k].

Args:
    *order: a permutation of range(rank), given variadically or as one list or tuple.

Returns:
    Layout: the permuted layout.

Raises:
    TypeError: 'Permutation dimensions must be integers'.
    ValueError: 'Permutation dimensions must reorder every layout mode'.

Examples:
    >>> Layout(Shape([2, 3]), Stride([1, 2])).permute(1, 0)
    (3,2):(2,1)
""",
    "Layout.raked_product": """raked_product($self, B, /)
--

The product with mode i = (P[i], self[i]): self's elements interleaved across the
repetition.

Args:
    B: the repetition layout.

Returns:
    Layout: the raked product.

Examples:
    >>> A = Layout(Shape([2, 5]), Stride([5, 1]))
    >>> A.raked_product(Layout(Shape([3, 4]), Stride([1, 3]))).size
    120
""",
    "Layout.rank": """The number of top-level modes (same as len(layout)).

Returns:
    int: the rank.

Examples:
    >>> Layout(Shape([2, [3, 4]]), Stride([1, [2, 6]])).rank
    2
""",
    "Layout.rearrange": """rearrange($self, /, output, selection=None)
--

Rearranges the pieces of the layout into a new nesting.

The pieces are extract_profile(selection). Node.id(k) in output places piece k, Node.Leaf
inserts the singleton 1:0, subtrees nest.

Args:
    output: a Tree of Node.id markers and Node.Leaf.
    selection: a profile Tree, or None for every leaf.

Returns:
    Layout: the rearranged layout.

Raises:
    ValueError: 'output must be a Tree', an id out of range, a repeated id, or an unused
        piece of size > 1.

Examples:
    >>> L = Layout(Shape([2, 3, 4]), Stride([1, 2, 6]))
    >>> L.rearrange(Tree(Node.id(2), Node.id(0), Node.id(1)))
    (4,2,3):(6,1,2)
""",
    "Layout.reverse_rearrange": """reverse_rearrange($cls, /, output, selection)
--

The (output, selection) pair that undoes a rearrangement.

Args:
    output: the output Tree of the rearrangement.
    selection: its selection Tree.

Returns:
    tuple[Tree, Tree]: the reverse output and selection.

Raises:
    ValueError: a non-Tree argument, a repeated id or an id out of range.

Examples:
    >>> Layout.reverse_rearrange(Tree(Node.id(0)), Tree(1, 1))
    ((Node.id(0), <Node.Leaf: 1>), (<Node.Leaf: 1>,))
""",
    "Layout.right_inverse": """right_inverse($self, /)
--

R with self(R(i)) == i for every i < R.size.

Returns:
    Layout: the right inverse over the longest contiguous prefix reached (1:0 if none).

Examples:
    >>> L = Layout(Shape([2, 3]), Stride([1, 2]))
    >>> [L(L.right_inverse()(i)) for i in range(6)]
    [0, 1, 2, 3, 4, 5]
""",
    "Layout.shape": """The shape tree.

Returns:
    Shape: the extents.

Examples:
    >>> Layout.leaf(4, 2).shape
    Shape<(4,)>
""",
    "Layout.size": """The number of logical elements: the product of the extents.

Returns:
    int: the size (1 for the empty layout).

Examples:
    >>> Layout(Shape([2, 3]), Stride([1, 4])).size
    6
""",
    "Layout.stride": """The stride tree.

Returns:
    Stride: the strides, congruent with the shape.

Examples:
    >>> Layout.leaf(4, 2).stride
    Stride<(2,)>
""",
    "Layout.tiled_divide": """tiled_divide($self, tiler, /)
--

The tiler divide as ((tiles...), rest_0, ..., remaining modes...).

Args:
    tiler: a sequence of Layouts.

Returns:
    Layout: the tile mode followed by the rest modes.

Examples:
    >>> A = Layout(Shape([9, [4, 8]]), Stride([59, [13, 1]]))
    >>> T = [Layout.leaf(3, 3), Layout(Shape([2, 4]), Stride([1, 8]))]
    >>> A.tiled_divide(T)
    ((3,(2,4)),3,(2,2)):((177,(13,2)),59,(26,1))
""",
    "Layout.zipped_divide": """zipped_divide($self, tiler, /)
--

The tiler divide gathered as ((tiles...), (rests..., remaining modes...)).

Args:
    tiler: a sequence of Layouts.

Returns:
    Layout: two modes, the tile and the rest.

Examples:
    >>> A = Layout(Shape([9, [4, 8]]), Stride([59, [13, 1]]))
    >>> T = [Layout.leaf(3, 3), Layout(Shape([2, 4]), Stride([1, 8]))]
    >>> A.zipped_divide(T)
    ((3,(2,4)),(3,(2,2))):((177,(13,2)),(59,(26,1)))
""",
    "MoveOperation": """MoveOperation()
--

The base of the operations that move a tensor into another carrier.

forward(tensor, destination) validates the move, makes the result Tensor over destination,
runs _copy(tensor, destination, output, element_count) and releases the source carrier once
it returned. Subclasses implement _copy; the class attributes source_class and
destination_class, when not None, pin the exact carrier classes the operation accepts. They
are read when the class is first instantiated or registered.

Returns:
    MoveOperation: the operation.

Examples:
    >>> from strideweave import Generic, Layout, Shape, Stride, Tensor
    >>> from strideweave.carriers.move import MoveOperation
    >>> class Copy(MoveOperation):
    ...     def _copy(self, tensor, destination, output, element_count):
    ...         for i in range(tensor.size()):
    ...             output[i] = tensor[i]
    >>> t = Tensor(Generic([1.0, 2.0]), 0, Layout(Shape(2), Stride(1)))
    >>> Copy().forward(t, Generic([0.0, 0.0]))[1]
    2.0
""",
    "MoveOperation._copy": """_copy($self, tensor, destination, output, element_count, /)
--

Performs one move's transfer: fills destination so that output holds tensor's values.

The base raises NotImplementedError; the built-in classes run their native copy.

Args:
    tensor: the Tensor being moved.
    destination: the receiving carrier.
    output: the result Tensor over destination.
    element_count: the layout's cosize, the slots covered.

Returns:
    None.

Examples:
    >>> from strideweave.carriers.move import MoveOperation
    >>> MoveOperation()._copy(None, None, None, 0)
    Traceback (most recent call last):
    NotImplementedError: MoveOperation._copy must be implemented
""",
    "NativeOperation": """A native operation of a class the binding does not name.

Returns:
    NativeOperation: not constructible from Python.

Examples:
    >>> from strideweave import _native
    >>> issubclass(_native.NativeOperation, Operation)
    True
""",
    "_ProjectionOperation": """The autograd node of a TiledEvictable projection (one per projection).

Its backward scatter-adds the cotangent into a fresh TiledEvictable gradient of the
source's layout and geometry: selected tiles primary, the others implicit zeros.

Returns:
    _ProjectionOperation: made by projection.project, not from Python.

Examples:
    >>> from strideweave import _native
    >>> issubclass(_native._ProjectionOperation, _native.Operation)
    True
""",
    "_ScatterOperation": """The autograd node of a TiledEvictable scatter.

Returns:
    _ScatterOperation: made by projection.scatter, not from Python.

Examples:
    >>> from strideweave import _native
    >>> issubclass(_native._ScatterOperation, _native.Operation)
    True
""",
    "OpenCL": """OpenCL(size, *, mutable=True, dtype=DType.Float32, empty=False, device=None)
--

Storage in one OpenCL device buffer (a GPU, or the CPU through PoCL).

The class is final. The arguments are checked before the OpenCL runtime (the ICD loader
libOpenCL.so.1) is loaded, at the first construction; without a runtime construction raises
RuntimeError with an install hint. Slots are zero unless empty. Reads are synchronised with
the device; a write bumps the version by exactly one once the device has confirmed it (a
failure leaves value and version unchanged). Moves CPU->OpenCL, OpenCL->CPU and
OpenCL->OpenCL are exact bulk transfers of the physical span. DLPack export is refused.

Args:
    size: the element count, >= 0.
    mutable: whether the carrier can be written.
    dtype: DType.Float32, DType.Int32 or DType.Bool.
    empty: leave the slots uninitialised.
    device: an index into opencl_devices(); None for the default (the environment variable
        STRIDEWEAVE_OPENCL_DEVICE, else the first GPU, else the first device).

Returns:
    OpenCL: the carrier.

Raises:
    TypeError: a non-integer size; 'OpenCL dtype must be a DType'; a subclass.
    ValueError: 'OpenCL size must be non-negative'; 'OpenCL dtype must be DType.Float32,
        DType.Int32 or DType.Bool'; a device index out of range.
    RuntimeError: 'OpenCL runtime is not available: ...' with an install hint.

Examples:
    >>> import strideweave as sw
    >>> c = sw.OpenCL(3, dtype=sw.DType.Int32)  # doctest: +SKIP
    >>> c[1] = 5  # doctest: +SKIP
    >>> list(c), c.version  # doctest: +SKIP
    ([0, 5, 0], 1)
""",
    "OpenCL.allocate_like": """allocate_like($self, /, size, *, mutable=True, dtype=None, empty=False)
--

A fresh OpenCL carrier on the same device (works after release too).

Args:
    size: the element count, >= 0.
    mutable: whether the new carrier can be written.
    dtype: the element type; None means this carrier's.
    empty: leave the slots uninitialised.

Returns:
    OpenCL: the new carrier.

Raises:
    ValueError: 'OpenCL allocation size must be non-negative', an unsupported dtype.

Examples:
    >>> c = OpenCL(2)  # doctest: +SKIP
    >>> c.allocate_like(4).size()  # doctest: +SKIP
    4
""",
    "OpenCL.device": """The index of the carrier's device in opencl_devices().

Returns:
    int: the device index.

Examples:
    >>> OpenCL(1).device  # doctest: +SKIP
    0
""",
    "OpenCL.dlpack_info": """dlpack_info($self, /)
--

Refused: OpenCL storage is not exported through DLPack.

Returns:
    dict: never returns.

Raises:
    BufferError: 'DLPack is not supported for this carrier'.

Examples:
    >>> OpenCL(1).dlpack_info()  # doctest: +SKIP
    Traceback (most recent call last):
    ...
    BufferError: DLPack is not supported for this carrier
""",
    "OpenCL.dtype": """dtype($self, /)
--

The element type.

Returns:
    DType: Float32, Int32 or Bool.

Examples:
    >>> OpenCL(1).dtype()  # doctest: +SKIP
    <DType.Float32: 'Float32'>
""",
    "OpenCL.get_value": """get_value($self, index, /)
--

Reads one element, after every device write and move enqueued before.

Args:
    index: the element, 0 <= index < size().

Returns:
    float | int | bool: the value (Float32 widened to double).

Raises:
    RuntimeError: 'Carrier is released', a device failure.
    IndexError: 'Carrier index out of range'.

Examples:
    >>> OpenCL(2).get_value(1)  # doctest: +SKIP
    0.0
""",
    "OpenCL.new_like": """new_like($self, /, values, *, mutable=True, dtype=None)
--

A fresh OpenCL carrier on the same device holding values (None entries are zero).

Args:
    values: an iterable of numbers or None.
    mutable: whether the new carrier can be written.
    dtype: the element type; None means this carrier's.

Returns:
    OpenCL: the new carrier, version 0.

Raises:
    TypeError: 'OpenCL value must be a number', 'OpenCL value must be an integer'.
    OverflowError: 'OpenCL value is out of int32 range'.

Examples:
    >>> list(OpenCL(1).new_like([1, 2.5]))  # doctest: +SKIP
    [1.0, 2.5]
""",
    "OpenCL.scatter": """scatter($self, /, to_scatter, scatter_onto, mapping, mapping_offset=0)
--

Atomic scatter: element onto.offset + mapping_offset + mapping(i) becomes to_scatter[i].

Every value is checked before the device is written; the write is confirmed before the call
returns and the version rises once. On failure values and version are unchanged.

Args:
    to_scatter: a Tensor over any carrier.
    scatter_onto: a Tensor over this carrier.
    mapping: a Layout of to_scatter's shape.
    mapping_offset: an offset added to every mapped index, >= 0.

Returns:
    None.

Raises:
    IndexError: 'Carrier index out of range'.
    TypeError: 'OpenCL scatter value must be a real number'.
    ValueError: a mapping of another shape, a negative offset, scatter_onto over another
        carrier.
    RuntimeError: 'Carrier is not mutable', 'Carrier is released'.

Examples:
    >>> import strideweave as sw
    >>> c = sw.OpenCL(4)  # doctest: +SKIP
    >>> src = sw.Tensor(sw.CPU(2).new_like([1.0, 2.0]), 0, sw.Layout(sw.Shape([2]), sw.Stride([1])))  # doctest: +SKIP
    >>> c.scatter(src, sw.Tensor(c, 0, sw.Layout(sw.Shape([4]), sw.Stride([1]))), sw.Layout(sw.Shape([2]), sw.Stride([2])))  # doctest: +SKIP
    >>> list(c), c.version  # doctest: +SKIP
    ([1.0, 0.0, 2.0, 0.0], 1)
""",
    "OpenCL.set_value": """set_value($self, index, value, /)
--

Writes one element once the device confirms it, and bumps the version by exactly one.

Args:
    index: the element, 0 <= index < size().
    value: a number (an integer for Int32).

Returns:
    None.

Raises:
    RuntimeError: 'Carrier is not mutable', 'Carrier is released', a device failure (the
        element and the version are unchanged).
    IndexError: 'Carrier index out of range'.
    TypeError: 'OpenCL value must be a number', 'OpenCL value must be an integer'.
    OverflowError: 'OpenCL value is out of int32 range'.

Examples:
    >>> c = OpenCL(1)  # doctest: +SKIP
    >>> c.set_value(0, 2.0)  # doctest: +SKIP
    >>> c[0], c.version  # doctest: +SKIP
    (2.0, 1)
""",
    "OpenCL.size": """size($self, /)
--

The number of elements; 0 after release.

Returns:
    int: the element count.

Examples:
    >>> OpenCL(3).size()  # doctest: +SKIP
    3
""",
    "OpenCL.supports_storage_dtype": """supports_storage_dtype($self, dtype, /)
--

Whether OpenCL stores dtype: Float32, Int32 and Bool; needs neither the runtime nor an
initialised instance.

Args:
    dtype: a DType.

Returns:
    bool: the answer.

Raises:
    TypeError: a non-DType.

Examples:
    >>> import strideweave as sw
    >>> OpenCL.__new__(OpenCL).supports_storage_dtype(sw.DType.Int32)
    True
""",
    "OpenCL.synchronize": """synchronize($self, /)
--

Waits until every command enqueued on the carrier's device has completed.

Returns:
    None.

Raises:
    RuntimeError: a device failure.

Examples:
    >>> OpenCL(1).synchronize()  # doctest: +SKIP
""",
    "Operation": """Operation()
--

An operation object: forward runs it and records the autograd context; backward returns one
gradient per saved input.

Subclass it in Python and implement _forward(*inputs) (returning a Tensor) and
backward(gradient) (returning one Tensor or None per entry of inputs()). forward(*inputs)
saves the Tensor inputs and their versions when grad mode is on and some input is
differentiable, runs _forward, and makes a differentiable result's autograd_ctx this
operation. ctx is a dict for the operation's own state.

Returns:
    Operation: an operation whose hooks are its Python methods.

Examples:
    >>> class Double(Operation):
    ...     def _forward(self, x):
    ...         return Tensor(x.carrier.new_like([2 * x[i] for i in range(x.size())]), 0, x.layout)
    ...     def backward(self, gradient):
    ...         return [gradient * 2]
    >>> x = Tensor(Generic([1.0, 2.0]), 0, Layout(Shape(2), Stride(1)))
    >>> op = Double()
    >>> y = op.forward(x)
    >>> y[1], y.autograd_ctx is op, op.inputs()[0] is x
    (4.0, True, True)
""",
    "Operation._dispatch_carrier_class": """The exact class of the carrier that dispatched the operation, or None.

Returns:
    type | None: the carrier class.

Examples:
    >>> CPU(1).dispatch_op('view')._dispatch_carrier_class is CPU
    True
""",
    "Operation._execute_lowered": """_execute_lowered($self, /, *inputs)
--

Runs _forward(*inputs) without touching the saved inputs or attaching an autograd context.

Args:
    *inputs: the operation's arguments.

Returns:
    Tensor: the result.

Raises:
    TypeError: 'Operation._forward must return a Tensor'.

Examples:
    >>> x = Tensor(Generic([2.0]), 0, Layout(Shape(1), Stride(1)))
    >>> y = GenericExpOperation()._execute_lowered(x)
    >>> round(y[0], 4), y.autograd_ctx
    (7.3891, None)
""",
    "Operation._forward": """_forward($self, /, *inputs)
--

The computation (a hook: Python subclasses implement it).

On a native operation it runs the computation without recording anything.

Args:
    *inputs: the operation's arguments.

Returns:
    Tensor: the result.

Raises:
    TypeError: 'Operation._forward must be implemented' when a Python subclass has none.

Examples:
    >>> Operation()._forward()
    Traceback (most recent call last):
    ...
    TypeError: Operation._forward must be implemented
""",
    "Operation._operation_name": """The canonical name the operation was dispatched under, or None.

Returns:
    str | None: the name.

Examples:
    >>> Operation()._operation_name is None
    True
""",
    "Operation.backward": """backward($self, gradient, /)
--

One gradient per saved input (a hook: Python subclasses implement it).

Args:
    gradient: the gradient of the result, a Tensor with the result's layout.

Returns:
    tuple: one Tensor (laid out like that input) or None per entry of inputs().

Raises:
    RuntimeError: 'Tried to call pure virtual function "Operation::backward"' when a Python
        subclass has none.

Examples:
    >>> x = Tensor(Generic([3.0]), 0, Layout(Shape(1), Stride(1)))
    >>> op = GenericScalarMulOperation()
    >>> y = op.forward(x, 2)
    >>> g = Tensor(Generic([1.0]), 0, y.layout)
    >>> op.backward(g)[0][0]
    2.0
""",
    "Operation.ctx": """The operation's state: a dict, the same object each time.

Returns:
    dict: the context (native operations fill it as the reference documents, e.g. 'scalar',
        'output_layout').

Examples:
    >>> op = Operation()
    >>> op.ctx['k'] = 1
    >>> op.ctx
    {'k': 1}
""",
    "Operation.forward": """forward($self, /, *inputs)
--

Runs the operation and records the autograd context.

When grad mode is on and some input is a differentiable Tensor, every Tensor input is saved
with its version; a differentiable result gets this operation as its autograd_ctx.
Positional arguments only.

Args:
    *inputs: the operation's arguments.

Returns:
    Tensor: the result.

Raises:
    TypeError: 'Operation._forward must return a Tensor', 'Operation._forward must be
        implemented'.

Examples:
    >>> x = Tensor(Generic([1.0, -1.0]), 0, Layout(Shape(2), Stride(1)))
    >>> op = GenericReLUOperation()
    >>> y = op.forward(x)
    >>> y[0], y[1], y.autograd_ctx is op
    (1.0, 0, True)
""",
    "Operation.input_versions": """input_versions($self, /)
--

The versions of the saved inputs at forward time.

Returns:
    tuple[int, ...]: one version per saved input.

Examples:
    >>> x = Tensor(Generic([1.0]), 0, Layout(Shape(1), Stride(1)))
    >>> op = GenericExpOperation()
    >>> _ = op.forward(x)
    >>> op.input_versions()
    (0,)
""",
    "Operation.inputs": """inputs($self, /)
--

The saved inputs (empty when no graph was recorded).

Returns:
    tuple: the saved Tensors, in argument order.

Examples:
    >>> Operation().inputs()
    ()
""",
    "Operation.store_inputs": """store_inputs($self, /, *inputs)
--

Replaces the saved inputs with exactly these tensors (the saved versions are kept).

Args:
    *inputs: Tensors.

Returns:
    None.

Raises:
    TypeError: 'Operation inputs must be Tensors'.

Examples:
    >>> x = Tensor(Generic([1.0]), 0, Layout(Shape(1), Stride(1)))
    >>> op = Operation()
    >>> op.store_inputs(x)
    >>> op.inputs()[0] is x
    True
""",
    "Operation.validate_input_versions": """validate_input_versions($self, /)
--

Checks that no saved input was written since forward.

Returns:
    None.

Raises:
    RuntimeError: 'A tensor needed for gradient computation was modified in-place: expected
        version X, got version Y'.

Examples:
    >>> x = Tensor(Generic([1.0]), 0, Layout(Shape(1), Stride(1)))
    >>> op = GenericExpOperation()
    >>> _ = op.forward(x)
    >>> x[0] = 2.0
    >>> op.validate_input_versions()
    Traceback (most recent call last):
    ...
    RuntimeError: A tensor needed for gradient computation was modified in-place: expected version 0, got version 1
""",
    "ProfilerSession": """ProfilerSession(carriers, record_shapes, record_backward=False)
--

The library's recording of dispatched operation executions (and, when asked, of backward
executions) on one thread; see
strideweave.profiling.""",
    "Shape": """Shape(*items)
--

A hierarchical tree of positive extents, immutable.

With no argument the shape is empty. One argument is the top level: an int n means [n], any
other iterable lists the top-level elements. Several arguments form the top level. Nested
lists or tuples nest; a Shape element holding one integer collapses to it, any other Shape
element nests.

Args:
    *items: ints (each >= 1) and nested iterables of them.

Returns:
    Shape: the new shape.

Raises:
    ValueError: an extent < 1 ('Dimension shape must not be less than 1'), an element that
        is neither an int nor an iterable, or a size that does not fit in 64 bits.
    TypeError: a single argument that is neither an int nor an iterable (a float, a str).

Examples:
    >>> Shape(2, [3, 4])
    Shape<(2, (3, 4))>
    >>> Shape(5) == Shape([5])
    True
""",
    "Shape.append": """append($cls, a, b, /)
--

Appends b to a: concatenated when b.is_int, else one nested element.

Args:
    a: the first tree.
    b: the tree to append, of the same class.

Returns:
    The joined tree.

Examples:
    >>> Shape.append(Shape(2), Shape(3, 4))
    Shape<(2, (3, 4))>
    >>> Shape.append(Shape(2), Shape(3))
    Shape<(2, 3)>
""",
    "Shape.concat": """concat($cls, a, b, /)
--

Joins the top-level elements of a and b.

Args:
    a: the first tree.
    b: the second tree, of the same class.

Returns:
    The tree whose top level is a's elements then b's.

Examples:
    >>> Shape.concat(Shape(2), Shape(3, [4, 5]))
    Shape<(2, 3, (4, 5))>
""",
    "Shape.depth": """Nesting depth: 1 for a flat (or empty) tree.

Returns:
    int: 1 + the depth of the deepest nested element.

Examples:
    >>> Shape([2, [3, [4]]]).depth
    3
""",
    "Shape.is_int": """True when the tree has at most one element and is flat.

Returns:
    bool: len(tree) <= 1 and depth <= 1 (the empty tree counts).

Examples:
    >>> Shape(4).is_int, Shape(2, 3).is_int
    (True, False)
""",
    "Shape.logical_size": """The number of elements: the product of the extents (1 when empty).

Returns:
    int: the logical size.

Examples:
    >>> Shape(2, [3, 4]).size
    24
""",
    "Shape.top_level": """The top level as nested tuples of ints.

Returns:
    tuple: one entry per top-level element; nested levels are tuples.

Examples:
    >>> Shape(2, [3, 4]).top_level
    (2, (3, 4))
""",
    "Stride": """Stride(*items)
--

A hierarchical tree of non-negative strides, immutable.

Built like Shape: no argument is empty, one argument is the top level (an int n means [n]),
several arguments form the top level, nested iterables nest.

Args:
    *items: ints (each >= 0) and nested iterables of them.

Returns:
    Stride: the new stride tree.

Raises:
    ValueError: a negative value ('Stride value must not be negative') or an element that is
        neither an int nor an iterable.
    TypeError: a single argument that is neither an int nor an iterable.

Examples:
    >>> Stride([1, [10, 100]])
    Stride<(1, (10, 100))>
    >>> Stride(0) == Stride([0])
    True
""",
    "Tensor": """Tensor(carrier, offset, layout)
--

A view of a carrier: element i is carrier[offset + layout(i)].

Several tensors (views) may share one carrier with different offsets and layouts; all of
them see the carrier's one version counter. Element access takes an int (a logical index) or
a tuple/list coordinate, nested for nested modes; missing trailing coordinates are 0 and
extra ones are ignored; a key with a slice anywhere is a view (strideweave.view). The
operators + - * / ** @ and unary - call add, sub, mul, div, pow, matmul and neg (o * t is
mul(t, o)). Equality and hashing are by identity.

Args:
    carrier: the Carrier holding the elements.
    offset: the index of the first element in the carrier, >= 0.
    layout: the Layout from logical coordinates to carrier indices.

Returns:
    Tensor: the view.

Raises:
    TypeError: a carrier that is not a Carrier, an offset that is not an int, a layout that
        is not a Layout.
    ValueError: 'Tensor offset must be non-negative', 'Tensor storage exceeds carrier size'
        (offset + layout.cosize must fit).

Examples:
    >>> c = CPU(6)
    >>> t = Tensor(c, 0, Layout(Shape(2, 3), Stride(3, 1)))
    >>> t[1, 2] = 5.0
    >>> c[5], t[1, 2], t[[1, 2]], t.version
    (5.0, 5.0, 5.0, 1)
    >>> t.carrier is c, t.size(), t.dtype()
    (True, 6, <DType.Float32: 'Float32'>)
""",
    "Tensor.__dlpack__": """__dlpack__($self, /, stream=None, *, max_version=None, dl_device=None, copy=None)
--

Exports the tensor's storage as a DLPack capsule, without copying.

The capsule aliases the carrier's memory: shape and strides are the layout's leaf modes
(strides in elements, stride 0 kept), byte_offset is offset * itemsize. It keeps this tensor
alive until the consumer lets go, but not released storage. Only carriers whose
dlpack_info() answers export (CPU), and only Float32 and Int32 tensors.

Args:
    stream: accepted and ignored (export does no device work).
    max_version: the consumer's highest DLPack version (major, minor); major >= 1 gives a
        "dltensor_versioned" capsule at version 1.0 whose read-only flag is set when the
        tensor is not mutable, None or major 0 a legacy "dltensor" capsule.
    dl_device: the device the consumer wants; must be the tensor's.
    copy: a true value asks for a copy, which is not supported.

Returns:
    A PyCapsule holding the managed tensor.

Raises:
    BufferError: 'DLPack copy exports are not supported', 'DLPack is not supported for this
        carrier', 'DLPack data pointer must be non-null', 'DLPack cross-device exports are
        not supported for this tensor', 'DLPack export supports only Float32 and Int32
        tensors'.
    TypeError: 'DLPack dl_device must be a tuple or list', 'DLPack max_version must be a
        tuple or list'.
    ValueError: 'DLPack dl_device must have two elements', 'DLPack max_version must have two
        elements', 'DLPack max_version elements must be non-negative'.

Examples:
    >>> t = Tensor(CPU(6), 0, Layout(Shape(2, 3), Stride(1, 2)))
    >>> type(t.__dlpack__()).__name__
    'PyCapsule'
    >>> t.__dlpack__(copy=True)
    Traceback (most recent call last):
    BufferError: DLPack copy exports are not supported
""",
    "Tensor.__dlpack_device__": """__dlpack_device__($self, /)
--

The DLPack device of the tensor's carrier.

Depends only on the carrier's dlpack_info(), so it answers for dtypes __dlpack__ refuses.

Returns:
    (device_type, device_id); (1, 0) for CPU.

Raises:
    BufferError: 'DLPack is not supported for this carrier', 'DLPack data pointer must be
        non-null'.

Examples:
    >>> Tensor(CPU(2), 0, Layout(Shape(2), Stride(1))).__dlpack_device__()
    (1, 0)
""",
    "Tensor.autograd_ctx": """The Operation that produced the tensor, or None for a leaf.

Setting None is always allowed; setting an Operation on a non-differentiable tensor raises
RuntimeError('autograd_ctx is not available for non-differentiable tensors').

Returns:
    Operation | None: the context.

Examples:
    >>> x = Tensor(Generic([1.0]), 0, Layout(Shape(1), Stride(1)))
    >>> x.autograd_ctx is None, type((x * 2).autograd_ctx).__name__
    (True, 'GenericScalarMulOperation')
""",
    "Tensor.backward": """backward($self, /, gradient=None)
--

Reverse-mode differentiation from this tensor: every leaf (and every tensor that retains
grad) reached accumulates its gradient in .grad.

The pass is iterative: shared subgraphs sum their gradients before their operation runs, and
each operation's backward runs once.

Args:
    gradient: a Tensor with this tensor's layout; may be omitted only for an exact scalar
        (one flat top-level mode of extent 1).

Returns:
    None.

Raises:
    RuntimeError: 'backward is not available for non-differentiable tensors', 'A tensor
        needed for gradient computation was modified in-place: ...'.
    TypeError: 'Tensor.backward requires a Tensor gradient'.
    ValueError: 'Tensor.backward requires a gradient for non-scalar tensors', 'Tensor
        gradient layout must match tensor layout'.

Examples:
    >>> x = Tensor(Generic([1.0, 2.0]), 0, Layout(Shape(2), Stride(1)))
    >>> y = x * x
    >>> y.backward(Tensor(Generic([1.0, 1.0]), 0, y.layout))
    >>> x.grad[0], x.grad[1]
    (2.0, 4.0)
""",
    "Tensor.backwards_traversal": """backwards_traversal($type, /, gradient, operation)
--

Runs only the graph propagation from operation, seeded with gradient (the root itself
accumulates nothing).

Args:
    gradient: the gradient of operation's result.
    operation: the Operation to start from, or None (then nothing happens).

Returns:
    None.

Examples:
    >>> x = Tensor(Generic([2.0]), 0, Layout(Shape(1), Stride(1)))
    >>> y = x * 3
    >>> Tensor.backwards_traversal(Tensor(Generic([1.0]), 0, y.layout), y.autograd_ctx)
    >>> x.grad[0], y.grad
    (3.0, None)
""",
    "Tensor.carrier": """The carrier object the tensor was made with.

Returns:
    Carrier: the same object (tensor.carrier is carrier).

Examples:
    >>> c = CPU(1)
    >>> Tensor(c, 0, Layout(Shape(1), Stride(1))).carrier is c
    True
""",
    "Tensor.carrier_type": """carrier_type($self, /)
--

The class of the carrier.

Returns:
    type: type(tensor.carrier).

Examples:
    >>> Tensor(CPU(1), 0, Layout(Shape(1), Stride(1))).carrier_type() is CPU
    True
""",
    "Tensor.dtype": """dtype($self, /)
--

The carrier's element type.

Returns:
    DType: carrier.dtype().

Examples:
    >>> Tensor(Generic([1]), 0, Layout(Shape(1), Stride(1))).dtype()
    <DType.Floating: 'Floating'>
""",
    "Tensor.grad": """The accumulated gradient: None until backward reaches this tensor as a leaf (or one that retains grad).

Reading or setting a gradient on a non-differentiable tensor raises RuntimeError('grad is
not available for non-differentiable tensors'); a gradient is a Tensor or None.

Returns:
    Tensor | None: the gradient, laid out like the tensor.

Examples:
    >>> x = Tensor(Generic([3.0]), 0, Layout(Shape(1), Stride(1)))
    >>> (x * x).backward()
    >>> x.grad[0]
    6.0
""",
    "Tensor.is_differentiable": """is_differentiable($self, /)
--

Whether the dtype is one autograd works on (Floating or Float32), and the tensor was not
made a constant (requires_grad False).

Returns:
    bool: differentiable.

Examples:
    >>> Tensor(CPU(1, dtype=DType.Int32), 0, Layout(Shape(1), Stride(1))).is_differentiable()
    False
""",
    "Tensor.is_mutable": """is_mutable($self, /)
--

Whether the carrier can be written now.

Returns:
    bool: carrier.is_mutable().

Examples:
    >>> Tensor(CPU(1, mutable=False), 0, Layout(Shape(1), Stride(1))).is_mutable()
    False
""",
    "Tensor.layout": """The layout object the tensor was made with.

Returns:
    Layout: the same object (tensor.layout is layout).

Examples:
    >>> Tensor(CPU(3), 0, Layout(Shape(3), Stride(1))).layout
    3:1
""",
    "Tensor.offset": """The carrier index of the first element.

Returns:
    int: the offset, >= 0.

Examples:
    >>> Tensor(CPU(3), 2, Layout(Shape(1), Stride(1))).offset
    2
""",
    "Tensor.requires_grad": """Whether the tensor takes part in autograd, as in PyTorch (beyond the reference).

Reads as is_differentiable(). Every Float32 and Floating tensor starts with True, as the
reference defines; setting False on a leaf makes it a constant for autograd: no gradient is
computed for it or accumulated into it (backward skips that work, such as the input-gradient
GEMM of a layer whose input batch is a constant), is_differentiable() is False, and while
grad mode is on, results computed from constants and nothing differentiable are constants
too. Setting True again makes it take part again.

Returns:
    bool: whether it takes part in autograd.

Raises:
    TypeError: a value that is not a bool.
    RuntimeError: a tensor that a recorded operation made ('requires_grad can only be
        changed on a leaf tensor ...'), or True on another dtype ('only tensors of a
        differentiable dtype ... can require gradients').

Examples:
    >>> w = Tensor(CPU(0).new_like([2.0]), 0, Layout(Shape(1), Stride(1)))
    >>> x = Tensor(CPU(0).new_like([3.0]), 0, Layout(Shape(1), Stride(1)))
    >>> x.requires_grad = False
    >>> (w * x).backward()
    >>> w.grad[0], x.requires_grad
    (3.0, False)
""",
    "Tensor._repr_html_": """_repr_html_($self, /)
--

The tensor for Jupyter: its repr, and the picture of its layout (strideweave.viz) when the
layout has rank 1 or 2 and at most viz.REPR_LIMIT elements.

Returns:
    str: HTML.
""",
    "Tensor.requires_grad_": """requires_grad_($self, /, requires_grad=True)
--

Sets requires_grad (see Tensor.requires_grad) and returns the tensor itself.

Args:
    requires_grad: a bool.

Returns:
    Tensor: self.

Raises:
    TypeError: a value that is not a bool.
    RuntimeError: as for the requires_grad property.

Examples:
    >>> x = Tensor(CPU(1), 0, Layout(Shape(1), Stride(1))).requires_grad_(False)
    >>> x.requires_grad, x.is_differentiable()
    (False, False)
""",
    "Tensor.retain_grad": """retain_grad($self, /, retain=True)
--

Makes backward store .grad on this non-leaf tensor too (or stop doing so).

Args:
    retain: whether to keep the gradient.

Returns:
    None.

Raises:
    RuntimeError: 'retain_grad is not available for non-differentiable tensors'.

Examples:
    >>> x = Tensor(Generic([3.0]), 0, Layout(Shape(1), Stride(1)))
    >>> y = x * 2
    >>> y.retain_grad()
    >>> (y * y).backward()
    >>> y.grad[0], x.grad[0]
    (12.0, 24.0)
""",
    "Tensor.T": """The transpose of a two-mode tensor: a permute view (no copy).

Returns:
    Tensor: permute(self, 1, 0), over the same carrier.

Raises:
    ValueError: 'T requires a two-mode tensor'.

Examples:
    >>> t = Tensor(CPU(6), 0, Layout(Shape(2, 3), Stride(1, 2)))
    >>> t.T.layout, t.T.carrier is t.carrier
    ((3,2):(2,1), True)
""",
    "Tensor.clone": """clone($self, /)
--

A differentiable copy with the same layout (recorded as mul(self, 1)).

Returns:
    Tensor: a fresh tensor over a new carrier of the same class.

Examples:
    >>> t = Tensor(CPU(2).new_like([1.0, 2.0]), 0, Layout(Shape(2), Stride(1)))
    >>> c = t.clone()
    >>> c.tolist(), c.carrier is t.carrier
    ([1.0, 2.0], False)
""",
    "Tensor.get": """get($self, key, /)
--

One element read by Python's indexing rules, beside t[key] (which keeps the
reference's): a negative coordinate counts from its mode's end (a negative
int key from the tensor's end), and more coordinates than modes, at any
level, are refused.

Args:
    key: an int (a logical index) or a (nested) tuple or list of ints.

Returns:
    object: the carrier's value at that element.

Raises:
    TypeError: for a key that is not ints and tuples or lists of ints.
    TensorIndexError: 'Key is not in domain of shape' when a coordinate
        stays outside its mode, 'Key has K coordinates for R modes' for
        extra coordinates (an IndexError and a ValueError).

Examples:
    >>> t = Tensor(CPU(6).new_like([0.0, 1, 2, 3, 4, 5]), 0, Layout(Shape(2, 3), Stride(3, 1)))
    >>> t.get((-1, -1)), t.get(-1)
    (5.0, 5.0)
""",
    "Tensor.set": """set($self, key, value, /)
--

Writes one element, the key read by Python's rules as in get().

Args:
    key: an int (a logical index) or a (nested) tuple or list of ints.
    value: the value, converted as for t[key] = value.

Returns:
    None

Raises:
    TypeError: for a bad key or value.
    TensorIndexError: as get() does.
    RuntimeError: for an immutable or released carrier.

Examples:
    >>> t = Tensor(CPU(2), 0, Layout(Shape(2), Stride(1)))
    >>> t.set(-1, 4.0)
    >>> t.tolist()
    [0.0, 4.0]
""",
    "Tensor.detach": """detach($self, /)
--

A new leaf over the same carrier, offset and layout: no autograd context, so
gradients stop here; writes through either are seen by both.

Returns:
    Tensor: Tensor(self.carrier, self.offset, self.layout).

Examples:
    >>> t = Tensor(CPU(2), 0, Layout(Shape(2), Stride(1)))
    >>> d = t.detach()
    >>> d.carrier is t.carrier, d.autograd_ctx is None
    (True, True)
""",
    "Tensor.item": """item($self, /)
--

The single value of a one-element tensor.

Returns:
    object: the carrier's value (a float for Float32).

Raises:
    ValueError: 'item requires a tensor with exactly one element'.

Examples:
    >>> Tensor(CPU(1).new_like([2.5]), 0, Layout(Shape(1), Stride(1))).item()
    2.5
""",
    "Tensor.ndim": """The number of top-level modes (the layout's rank).

Returns:
    int: len(self.shape).

Examples:
    >>> Tensor(CPU(6), 0, Layout(Shape(2, 3), Stride(1, 2))).ndim
    2
""",
    "Tensor.numel": """numel($self, /)
--

The number of logical elements, as PyTorch names it (the same as size()).

Returns:
    int: the layout's size.

Examples:
    >>> Tensor(CPU(6), 0, Layout(Shape(2, 3), Stride(1, 2))).numel()
    6
""",
    "Tensor.numpy": """numpy($self, /)
--

A NumPy array of the values, indexed like the tensor by top-level modes.

A CPU tensor whose layout DLPack can describe is shared without a copy (writes
through either are seen by both); any other tensor (Generic, FileBacked,
Evictable, hierarchical layouts) is copied. Needs NumPy.

Returns:
    numpy.ndarray: float32 for Float32, int32 for Int32, float64 for
    Floating, object otherwise.

Examples:
    >>> t = Tensor(CPU(6).new_like([1, 2, 3, 4, 5, 6]), 0, Layout(Shape(2, 3), Stride(1, 2)))
    >>> t.numpy().tolist()
    [[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]]
""",
    "Tensor.shape": """The top-level extents, as a tuple of ints.

A hierarchical mode counts as its size: ((2,2),3) has shape (4, 3). Unlike
PyTorch, size() stays the element count.

Returns:
    tuple[int, ...]: one extent per top-level mode.

Examples:
    >>> Tensor(CPU(12), 0, Layout(Shape([2, 2], 3), Stride([1, 2], 4))).shape
    (4, 3)
""",
    "Tensor.size": """size($self, /)
--

The number of logical elements: the layout's size.

Returns:
    int: layout.shape.logical_size.

Examples:
    >>> Tensor(CPU(8), 0, Layout(Shape(2, 2), Stride(4, 1))).size()
    4
""",
    "Tensor.tolist": """tolist($self, /)
--

The values as nested lists by top-level modes: mode 0 is the outermost list,
so ``t.tolist()[i][j] == t[i, j]``.

Returns:
    list: nested lists of the carrier's values (one level per mode).

Examples:
    >>> t = Tensor(CPU(6).new_like([1, 2, 3, 4, 5, 6]), 0, Layout(Shape(2, 3), Stride(1, 2)))
    >>> t.tolist()
    [[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]]
""",
    "Tensor.version": """The carrier's version, read on every access.

Returns:
    int: the version shared by every view of the carrier.

Examples:
    >>> c = CPU(2)
    >>> t = Tensor(c, 0, Layout(Shape(2), Stride(1)))
    >>> c[0] = 1.0
    >>> t.version
    1
""",
    "_adam_step": """_adam_step($module, param, grad, m, v, lr, beta1, beta2, eps, weight_decay, step, /)
--

One Adam step in place over CPU Float32 tensors of one shape (sw_tensor_adam_step): m and v
are the moment estimates, step counts from 1. nn.Adam's step.

Args:
    param: the Tensor updated.
    grad: its gradient.
    m: the first-moment Tensor (updated).
    v: the second-moment Tensor (updated).
    lr: the learning rate.
    beta1: the first moment's decay.
    beta2: the second moment's decay.
    eps: added to the denominator.
    weight_decay: L2 decay added to the gradient.
    step: the number of this step.

Returns:
    None.

Raises:
    TypeError: 'param must be a Tensor', 'adam needs CPU tensors', 'adam needs Float32
        tensors'.
    ValueError: 'adam operands must have the parameter's shape', 'adam: lr must be
        positive', ...
    RuntimeError: 'Carrier is released', 'Carrier is not mutable'.

Examples:
    >>> from strideweave._native import _adam_step
    >>> import strideweave.friendly as F
    >>> p, g = F.tensor([1.0]), F.tensor([0.5])
    >>> m, v = F.zeros(1), F.zeros(1)
    >>> _adam_step(p, g, m, v, 0.1, 0.9, 0.999, 1e-8, 0.0, 1)
    >>> round(p[0], 6)
    0.9
""",
    "_axpy": """_axpy($module, y, alpha, x, /)
--

In place y += alpha * x for CPU Float32 tensors of one shape (their layouts and offsets may
differ), computed in double and rounded once; y's version rises by one. The optimizers'
step.

Args:
    y: the Tensor updated.
    alpha: a real number.
    x: the Tensor added.

Returns:
    None.

Raises:
    TypeError: 'y must be a Tensor', 'axpy needs CPU tensors', 'axpy needs Float32 tensors'.
    ValueError: 'axpy operands must have the same shape'.
    RuntimeError: 'Carrier is released', 'Carrier is not mutable'.

Examples:
    >>> from strideweave._native import _axpy
    >>> import strideweave.friendly as F
    >>> w, g = F.tensor([1.0, 2.0]), F.tensor([4.0, 8.0])
    >>> _axpy(w, -0.5, g)
    >>> F.to_list(w)
    [-1.0, -2.0]
""",
    "_softmax": """_softmax($module, x, log, /)
--

softmax (log false) or log_softmax (log true) over the classes of a CPU Float32 tensor of one
or two flat modes (rows along mode 0, classes along mode 1; one mode is one row), in double
with the row's maximum subtracted first (sw_softmax). Records no autograd context.

Args:
    x: the Tensor of logits.
    log: whether to return log-probabilities.

Returns:
    Tensor: a fresh CPU tensor, in x's layout when that is injective, else row-major.

Raises:
    TypeError: 'x must be a Tensor', 'softmax input must be a CPU Float32 tensor'.
    ValueError: 'softmax needs a tensor of one or two flat modes'.
    RuntimeError: 'Carrier is released'.

Examples:
    >>> from strideweave._native import _softmax
    >>> import strideweave.friendly as F
    >>> F.to_list(_softmax(F.tensor([0.0, 0.0]), False))
    [0.5, 0.5]
""",
    "_softmax_backward": """_softmax_backward($module, x, gradient, log, /)
--

The vector-Jacobian product of _softmax at x for the gradient of its result
(sw_softmax_backward).

Args:
    x: the Tensor softmax was applied to.
    gradient: a Tensor of x's shape.
    log: whether the forward was log_softmax.

Returns:
    Tensor: the gradient with respect to x, in x's layout.

Raises:
    TypeError: as _softmax, and 'gradient must be a Tensor'.
    ValueError: 'softmax gradient must have the input's shape'.

Examples:
    >>> from strideweave._native import _softmax_backward
    >>> import strideweave.friendly as F
    >>> F.to_list(_softmax_backward(F.tensor([0.0, 0.0]), F.tensor([1.0, 1.0]), True))
    [0.0, 0.0]
""",
    "_cross_entropy": """_cross_entropy($module, logits, target, reduction, /)
--

The cross-entropy of two-mode logits (rows, classes) against class indices (one per row, CPU
Float32 holding integers or CPU Int32, any layout of that size) or class probabilities of the
logits' shape (sw_cross_entropy). Records no autograd context.

Args:
    logits: the Tensor of scores.
    target: the Tensor of indices or probabilities.
    reduction: 'mean' or 'sum' over the rows.

Returns:
    Tensor: the loss, a 1:1 CPU tensor.

Raises:
    TypeError: a non-Tensor, or a carrier other than CPU Float32 (Int32 for indices).
    ValueError: 'reduction must be 'mean' or 'sum'', a target of another size, or an index
        that is not an integer.
    IndexError: 'cross_entropy target K is outside [0, C)'.

Examples:
    >>> from strideweave._native import _cross_entropy
    >>> import strideweave.friendly as F
    >>> round(F.item(_cross_entropy(F.tensor([[0.0, 0.0]]), F.tensor([1.0]), "mean")), 4)
    0.6931
""",
    "_cross_entropy_backward": """_cross_entropy_backward($module, logits, target, reduction, gradient, /)
--

The gradient of _cross_entropy with respect to the logits, times the single element of
gradient: (softmax(logits) * row_total - target) / rows for 'mean'
(sw_cross_entropy_backward).

Args:
    logits: the Tensor of scores.
    target: the Tensor of indices or probabilities.
    reduction: 'mean' or 'sum'.
    gradient: a one-element CPU Float32 Tensor.

Returns:
    Tensor: the gradient in the logits' layout.

Raises:
    TypeError: as _cross_entropy, and for a gradient of more than one element.
    ValueError: as _cross_entropy.
    IndexError: as _cross_entropy.

Examples:
    >>> from strideweave._native import _cross_entropy_backward
    >>> import strideweave.friendly as F
    >>> g = _cross_entropy_backward(F.tensor([[0.0, 0.0]]), F.tensor([1.0]), "mean", F.tensor([1.0]))
    >>> F.to_list(g)
    [0.5, -0.5]
""",
    "_carrier_definition": """_carrier_definition($module, cls, /)
--

The CarrierDefinition registered for exactly cls, or None; observes nothing.

Args:
    cls: a class.

Returns:
    CarrierDefinition | None: the definition.

Examples:
    >>> import strideweave as sw
    >>> from strideweave._native import _carrier_definition
    >>> _carrier_definition(sw.CPU) is None
    True
""",
    "_define_carrier": """_define_carrier($module, cls, definition, storage, routes, dependent, has_kernels, has_composite, fallback, interface, patterns, /)
--

Registers a CarrierDefinition with the library (see strideweave.carriers.extension).

Args:
    cls: the exact class.
    definition: the CarrierDefinition (kept until the class goes).
    storage: its StorageProvider.
    routes: (source class, destination class, route id, provider) per TransferRoute.
    dependent: whether cls is a DependentCarrier.
    has_kernels: whether a KernelProvider is supplied.
    has_composite: whether a CompositeProvider is supplied.
    fallback: the storage provider's elementwise_fallback.
    interface: the KernelProvider's KernelExecutionInterface, or None.
    patterns: (operation name, raw plans, kernel_id, preference, KernelPattern)
        per pattern of the KernelProvider.

Returns:
    None.

Examples:
    >>> from strideweave._native import _define_carrier
    >>> callable(_define_carrier)
    True
""",
    "_register_kernel_pack": """_register_kernel_pack($module, cls, namespace, version, interface, provider_interface, patterns, /)
--

Registers a KernelPack with the library (see strideweave.carriers.extension).

Args:
    cls: the exact target class.
    namespace: the pack's namespace.
    version: the pack's version.
    interface: the pack's KernelExecutionInterface (its type and version must
        match the provider's).
    provider_interface: the KernelProvider's interface, which each prepare
        receives.
    patterns: (operation name, raw plans, kernel_id, preference, KernelPattern)
        per pattern.

Returns:
    None.

Examples:
    >>> from strideweave._native import _register_kernel_pack
    >>> callable(_register_kernel_pack)
    True
""",
    "_defined_finalize": """_defined_finalize($module, carrier, /)
--

Finalizes a dependent definition-backed carrier's capabilities through its CompositeProvider.

Args:
    carrier: an instance of a DependentCarrier class with a CarrierDefinition.

Returns:
    None.

Raises:
    RuntimeError: 'already finalized'.
    TypeError: a carrier of another class.

Examples:
    >>> import strideweave as sw
    >>> from strideweave._native import _defined_finalize
    >>> _defined_finalize(sw.CPU(1))
    Traceback (most recent call last):
    ...
    TypeError: carrier is not of a dependent definition-backed class
""",
    "_tiled_new": """_tiled_new($module, cls, primary, secondary, grid_shape, tile_shape, /)
--

A library TiledEvictable over the tiers, wrapped in cls (the registered TiledEvictable class).

Args:
    cls: the TiledEvictable class.
    primary: the compute tier.
    secondary: the backing tier.
    grid_shape: tiles per axis.
    tile_shape: slots per tile per axis.

Returns:
    TiledEvictable: the carrier.

Examples:
    >>> from strideweave._native import _tiled_new
    >>> callable(_tiled_new)
    True
""",
    "_tiled_geometry": """_tiled_geometry($module, carrier, /)
--

The (grid_shape, tile_shape) of a live TiledEvictable.

Args:
    carrier: a TiledEvictable.

Returns:
    tuple: two tuples of ints.

Examples:
    >>> import strideweave as sw
    >>> from strideweave._native import _tiled_geometry
    >>> _tiled_geometry(sw.TiledEvictable(sw.CPU(2), sw.CPU(2), (1,), (2,)))
    ((1,), (2,))
""",
    "_tiled_tiers": """_tiled_tiers($module, carrier, /)
--

The (primary, secondary) tiers of a live TiledEvictable.

Args:
    carrier: a TiledEvictable.

Returns:
    tuple: two carriers.

Examples:
    >>> from strideweave._native import _tiled_tiers
    >>> callable(_tiled_tiers)
    True
""",
    "_tiled_states": """_tiled_states($module, carrier, /)
--

Per tile index, (location, valid, dirty): location 0 primary, 1 secondary, 2 implicit.

Args:
    carrier: a TiledEvictable.

Returns:
    tuple: one triple per tile.

Examples:
    >>> import strideweave as sw
    >>> from strideweave._native import _tiled_states
    >>> _tiled_states(sw.TiledEvictable(sw.CPU(2), sw.CPU(2), (1,), (2,)))
    ((0, True, False),)
""",
    "_tiled_residency": """_tiled_residency($module, carrier, tiles, evict, /)
--

Promotes (evict False) or evicts the tiles of the given indices, all or nothing.

Args:
    carrier: a TiledEvictable.
    tiles: a tuple of tile indices.
    evict: whether to evict.

Returns:
    None.

Examples:
    >>> from strideweave._native import _tiled_residency
    >>> callable(_tiled_residency)
    True
""",
    "_tiled_residency_async": """_tiled_residency_async($module, carrier, tiles, evict, /)
--

Starts promoting (evict False) or evicting the tiles of the given indices on the move
executor, all or nothing; the tiles are checked and claimed before it returns.

Args:
    carrier: a TiledEvictable.
    tiles: a tuple of tile indices.
    evict: whether to evict.

Returns:
    AwaitResidency: its wait() returns None or raises the failure.

Examples:
    >>> from strideweave._native import _tiled_residency_async
    >>> callable(_tiled_residency_async)
    True
""",
    "_tiled_project": """_tiled_project($module, tensor, counts, coords, destination, /)
--

Starts gathering the selected tiles of a full TiledEvictable tensor into one compact
tensor (checked before it returns; the selected tiles are held until it ends).

Args:
    tensor: a Tensor on a TiledEvictable.
    counts: the number of selected tile coordinates per axis.
    coords: the coordinates, one axis after another.
    destination: a Carrier of the primary tier's class, or None for a fresh one.

Returns:
    AwaitProjection: its wait() returns the compact Tensor.

Examples:
    >>> from strideweave._native import _tiled_project
    >>> callable(_tiled_project)
    True
""",
    "_tiled_scatter": """_tiled_scatter($module, compact, template, counts, coords, add, /)
--

Starts scattering a compact tensor into a fresh TiledEvictable shaped like template.

Args:
    compact: a Tensor on the primary tier's class.
    template: a full Tensor on a TiledEvictable.
    counts: the number of selected tile coordinates per axis.
    coords: the coordinates, one axis after another.
    add: add onto the template's values instead of replacing.

Returns:
    AwaitMove: its wait() returns the new TiledEvictable Tensor.

Examples:
    >>> from strideweave._native import _tiled_scatter
    >>> callable(_tiled_scatter)
    True
""",
    "_tiled_pending": """_tiled_pending($module, carrier, /)
--

The number of a TiledEvictable's asynchronous requests that have not ended.

Args:
    carrier: a TiledEvictable.

Returns:
    int: 0 once all work has ended.

Examples:
    >>> from strideweave._native import _tiled_pending
    >>> callable(_tiled_pending)
    True
""",
    "_register_tiled_type": """_register_tiled_type($module, cls, /)
--

Names the Python class library TiledEvictable carriers are wrapped in.

Args:
    cls: the TiledEvictable class.

Returns:
    None.

Examples:
    >>> from strideweave._native import _register_tiled_type
    >>> callable(_register_tiled_type)
    True
""",
    "_is_defined_dependent": """_is_defined_dependent($module, carrier, /)
--

Whether the library keeps carrier's instance capabilities (a dependent definition-backed carrier).

Args:
    carrier: any object.

Returns:
    bool: the answer.

Examples:
    >>> import strideweave as sw
    >>> from strideweave._native import _is_defined_dependent
    >>> _is_defined_dependent(sw.CPU(1))
    False
""",
    "_tiled_use_policy": """_tiled_use_policy($module, carrier, /)
--

Makes the library ask the carrier object's _policy_plan for every piece of work.

Args:
    carrier: a TiledEvictable with a residency policy.

Returns:
    None.

Examples:
    >>> from strideweave._native import _tiled_use_policy
    >>> callable(_tiled_use_policy)
    True
""",
    "_kernel_ids": """_kernel_ids($module, cls, /)
--

The kernel ids of exactly cls's patterns in candidate order; observes nothing.

Args:
    cls: a class.

Returns:
    tuple[str, ...]: the ids (empty without a definition).

Examples:
    >>> import strideweave as sw
    >>> from strideweave._native import _kernel_ids
    >>> _kernel_ids(sw.CPU)
    ()
""",
    "_caps_list": """_caps_list($module, source, name, /)
--

The sorted capabilities of a class (observing it), a snapshot or an Evictable carrier.

Returns:
    tuple: raw capabilities.
""",
    "_caps_match": """_caps_match($module, source, name, plan, /)
--

The index of the capability matching a raw plan in the source's list.

Returns:
    int: the index, or -1 when none matches.
""",
    "_caps_reason": """_caps_reason($module, source, name, plan, /)
--

Why the source does not execute a raw plan.

Returns:
    str | None: the sentence, or None when it does.
""",
    "_check_capability": """_check_capability($module, capability, /)
--

Checks a raw capability with the library's rules.

Returns:
    None; raises TypeError or ValueError.
""",
    "_class_state": """_class_state($module, cls, /)
--

Where a class's capability set stands, without observing it.

Returns:
    int: 0 open, 1 declared, 2 sealed empty by a query, 3 by construction, 4 a shipped
        backend.
""",
    "_debug_allocate_like": """_debug_allocate_like($module, carrier, size, dtype=None, /)
--

The library's allocate_like policy on carrier (for tests: it runs a Python carrier's hook as
library code does).

Args:
    carrier: any carrier.
    size: the element count.
    dtype: a DType, or None for the carrier's own.

Returns:
    Carrier: the new carrier.
""",
    "_debug_fail_alloc_after": """_debug_fail_alloc_after($module, n, /)
--

Fault injection: the library allocator succeeds n more times, then fails.

Args:
    n: allocations that still succeed; a negative n disables the hook.

Returns:
    None.
""",
    "_debug_fail_io_after": """_debug_fail_io_after($module, n, /)
--

Fault injection: n more file operations succeed, later ones fail with ENOSPC.

Args:
    n: file operations that still succeed; a negative n disables the hook.

Returns:
    None.
""",
    "_debug_opencl_fail": """_debug_opencl_fail($module, stage, after, /)
--

Fault injection for the OpenCL runtime: after more calls at stage succeed, the next one fails
as the runtime would ('... failed (injected)'); then the hook is off.

Args:
    stage: 'enqueue', 'wait', 'map', 'compile', or 'none' (off).
    after: calls at that stage that still succeed.

Returns:
    None.
""",
    "_debug_opencl_hold": """_debug_opencl_hold($module, hold, /)
--

Device-side gate for tests: while held, every OpenCL device in use runs nothing enqueued after
the hold began (commands are accepted and wait), so submitted work can be observed before it
completes; anything that waits for the device blocks until the hold ends.

Args:
    hold: True to hold the devices' queues, False to let them run.

Returns:
    None.
""",
    "get_num_threads": """get_num_threads($module, /)
--

The number of threads large CPU kernels use, the calling one included.

It is what set_num_threads last stored; before that, the environment variable
STRIDEWEAVE_NUM_THREADS when it is an integer from 1 to 1024 (read once, at first use),
otherwise the number of cores the process may run on.

Returns:
    int: the thread count, at least 1.

Examples:
    >>> from strideweave import get_num_threads
    >>> get_num_threads() >= 1
    True
""",
    "opencl_devices": """opencl_devices($module, /)
--

The OpenCL devices of every platform, in the order OpenCL(device=...) indexes them.

Loads the runtime on first use; without one the list is empty.

Returns:
    list[dict]: one dict per device with 'index', 'platform', 'name', 'type' ('GPU', 'CPU',
    'Accelerator' or 'Other'), 'global_memory' (bytes) and 'default' (the device OpenCL()
    uses when no device is given).

Examples:
    >>> import strideweave as sw
    >>> isinstance(sw.opencl_devices(), list)
    True
""",
    "set_num_threads": """set_num_threads($module, n, /)
--

Sets the number of threads large CPU kernels use, the calling one included.

The setting is process-wide. Kernels of at least about 128K elements split their work into
chunks that do not depend on the thread count, so results are bit-identical for every
setting, sums included; smaller ones always run on the calling thread. The kernels run
without the GIL, so several Python threads can run them at once (one of them uses the pool,
the others run on their own thread).

Args:
    n: an int from 1 to 1024 (1 runs everything on the calling thread).

Returns:
    None.

Raises:
    TypeError: 'set_num_threads() argument must be an int, not str'.
    ValueError: 'the number of threads must be between 1 and 1024, not 0'.

Examples:
    >>> from strideweave import get_num_threads, set_num_threads
    >>> before = get_num_threads()
    >>> set_num_threads(2)
    >>> get_num_threads()
    2
    >>> set_num_threads(0)
    Traceback (most recent call last):
    ValueError: the number of threads must be between 1 and 1024, not 0
    >>> set_num_threads(before)
""",
    "_compound_check": """_compound_check($module, name, simple_types, /)
--

Checks a CompoundDType's name and planes by the library's rules (CompoundDType uses it).

Args:
    name: the name, a non-empty str.
    simple_types: a sequence of 2 to 16 DType members.

Returns:
    None: the rules hold; TypeError or ValueError otherwise.

Examples:
    >>> from strideweave import DType, _native
    >>> _native._compound_check("mx", (DType.Float32, DType.Int32))
    >>> _native._compound_check("mx", (DType.Float32,))
    Traceback (most recent call last):
    ValueError: CompoundDType needs at least 2 planes and at most 16, got 1
""",
    "_representation_check": """_representation_check($module, representation, /)
--

Validates a TensorRepresentation by the library's rules (its __post_init__ uses it).

Args:
    representation: the TensorRepresentation.

Returns:
    None: it is valid; ValueError or TypeError naming the rule otherwise.

Examples:
    >>> from strideweave import _native
    >>> _native._representation_check(None)
    Traceback (most recent call last):
    AttributeError: 'NoneType' object has no attribute 'logical_dtype'
""",
    "_require_one_subtensor": """_require_one_subtensor($module, tensor, /)
--

The library's gate for operations bound in Python: refuses a multi-subtensor tensor.

Args:
    tensor: a Tensor.

Returns:
    None: a single-subtensor tensor; NotImplementedError "Multi-subtensor Tensor operation
    execution ..." otherwise.

Examples:
    >>> from strideweave import CPU, Layout, Tensor, _native
    >>> _native._require_one_subtensor(Tensor(CPU(2), 0, Layout.leaf(2, 1)))
""",
    "Tensor._from_representation": """_from_representation($type, representation, /)
--

The tensor of a TensorRepresentation (private): the one way to a multi-subtensor tensor.

The library validates the representation; Tensor(carrier, offset, layout) always builds one
subtensor.

Args:
    representation: a strideweave.core._representation.TensorRepresentation.

Returns:
    Tensor: a tensor whose carrier, offset and layout are subtensor 0's.

Examples:
    >>> from strideweave import CPU, DType, Layout, Tensor
    >>> from strideweave.core._representation import Subtensor, TensorRepresentation
    >>> c = CPU(2)
    >>> rep = TensorRepresentation(DType.Float32, [Subtensor(DType.Float32, c, 0, Layout.leaf(2, 1))], [])
    >>> Tensor._from_representation(rep).carrier is c
    True
""",
    "Tensor._representation": """The tensor's representation (private): logical dtype, subtensors, adjacent layouts.

Returns:
    TensorRepresentation: subtensor 0 holds the tensor's own carrier and layout objects.

Examples:
    >>> from strideweave import CPU, Layout, Tensor
    >>> t = Tensor(CPU(2), 0, Layout.leaf(2, 1))
    >>> t._representation.primary.carrier is t.carrier, t._representation.adjacent_layouts
    (True, ())
""",
    "Tensor._version_token": """_version_token($self, /)
--

One (id(carrier), version) pair per unique carrier, in order of first appearance (private).

Returns:
    tuple[tuple[int, int], ...]: the token autograd would save.

Examples:
    >>> from strideweave import CPU, Layout, Tensor
    >>> c = CPU(2)
    >>> Tensor(c, 0, Layout.leaf(2, 1))._version_token() == ((id(c), c.version),)
    True
""",
    "_debug_live_allocs": """_debug_live_allocs($module, /)
--

The number of live libstrideweave allocations, process-wide.

Tests compare it before and after a call to prove that the C library leaked nothing.

Returns:
    int: allocations made and not yet freed.
""",
    "_debug_move_hold": """_debug_move_hold($module, hold, /)
--

Test hook: while hold is true, asynchronous move workers wait before transferring.

Args:
    hold: hold (true) or let the workers go (false).

Returns:
    None.
""",
    "_debug_new_like": """_debug_new_like($module, carrier, values, /)
--

The library's new_like policy on carrier (for tests: it runs a Python carrier's hook as
library code does).

Args:
    carrier: any carrier.
    values: the values; None marks a hole.

Returns:
    Carrier: the new carrier.
""",
    "_declare_capabilities": """_declare_capabilities($module, cls, name, capabilities, /)
--

Declares the complete capability set of carrier class cls (atomic).

Args:
    cls: the exact class.
    name: its name in messages.
    capabilities: raw capabilities.

Returns:
    None.
""",
    "_define_operation": """_define_operation(name, operands, options, has_vjp, non_differentiable, definition) -> int

Registers a Python definition in the library's registry and returns its id.

Args:
    name: the namespaced name.
    operands: (name, kind index, differentiable) tuples.
    options: (name, required, default) tuples.
    has_vjp: the definition has a VJP callable.
    non_differentiable: its vjp is NON_DIFFERENTIABLE.
    definition: the OperationDefinition, kept for ever.
""",
    "_definition_call": """_definition_call(id, definition, operands, options) -> tuple

Calls a registered Python definition through the library.

Returns:
    tuple[Tensor, ...]: the results.
""",
    "_definition_node": """_definition_node(op) -> (invocation or None, saved tuple) or None

What a defined operation's autograd node keeps now; None for another operation.
""",
    "_describe_plan": """_describe_plan($module, plan, /)
--

The stable description of a raw plan.

Returns:
    str: 'add with operands (tensor Int32->Int32, ...), int32_exact_checked compute, no
        accumulation, Int32 output'.
""",
    "_einops_einsum": """_einops_einsum($module, lhs, rhs, description, /)
--

strideweave.einops.einsum.
""",
    "_einops_lex": """_einops_lex($module, command, /)
--

The tokens of a layout command (see strideweave.einops.lex).
""",
    "_einops_parse": """_einops_parse($module, kind, command, /)
--

The cached spec of a command: kind 0 rearrange, 1 reduce, 2 einsum (see
strideweave.einops.parse_rearrange).
""",
    "_einops_parse_layout_ref": """_einops_parse_layout_ref($module, tokens, /)
--

Parses Token objects as one layout reference (see strideweave.einops.parse_layout_ref).
""",
    "_einops_rearrange": """_einops_rearrange($module, tensor, description, /)
--

strideweave.einops.rearrange.
""",
    "_einops_reduce": """_einops_reduce($module, tensor, description, /)
--

strideweave.einops.reduce.
""",
    "_einops_register": """_einops_register($module, token, layout_reference, rearrange_spec, reduce_spec, einsum_spec, /)
--

Registers the classes of strideweave.einops (called once at its import; not part of the
public API).
""",
    "_file_remove_temporaries": """_file_remove_temporaries($module, /)
--

Removes the files of every temporary FileBacked carrier still open (registered with atexit
by strideweave.carriers).

Returns:
    None.
""",
    "_functional_operations": """_functional_operations($module, /)
--

The names of the registered operations that have a functional form, in registry order.

Returns:
    list[str]: the names.

Examples:
    >>> from strideweave._native import _functional_operations
    >>> import strideweave.functional as F
    >>> all(hasattr(F, n) for n in _functional_operations())
    True
""",
    "_is_defined_operation": """_is_defined_operation(name) -> bool

Whether name is an operation defined at run time.
""",
    "_move_pending_count": """_move_pending_count($module, /)
--

The number of asynchronous moves running now.

Returns:
    int: the running moves.
""",
    "_move_wait_idle": """_move_wait_idle($module, /)
--

Blocks until no asynchronous move is running (registered with atexit by
strideweave.carriers.move).

Returns:
    None.
""",
    "_native_classes": """_native_classes($module, backend, /)
--

The class names of one backend's native operations ('cpu', 'generic' or 'shared'), sorted.

Args:
    backend: the backend's name.

Returns:
    list[str]: the names (empty for an unknown backend).

Examples:
    >>> from strideweave._native import _native_classes
    >>> _native_classes('shared')[0]
    'GenericViewOperation'
""",
    "_plan_names": """_plan_names($module, /)
--

The library's name tables of plans.

Returns:
    dict: 'arithmetic', 'accumulation' and 'role' to tuples of names, in enumerator order.
""",
    "_plan_operations": """_plan_operations($module, /)
--

The registered operations that have plans, in registry order.

Returns:
    tuple: (plan name, dispatch name, title, ((operand name, role name), ...)) per
        operation.
""",
    "_register_definition_layer": """_register_definition_layer(ProviderContractError, VJPContext, _execute_reference, _call_vjp)

Gives the binding the Python layer's names.
""",
    "_register_dtype": """_register_dtype($module, dtype, /)
--

Registers the DType enum, whose members map to the library's dtypes by name.

Called once by strideweave.carriers.dtype at import; not part of the public API.

Args:
    dtype: the DType enum class, with members Any, Floating, Float32, Int32 and Bool.

Returns:
    None.
""",
    "_register_tree_types": """_register_tree_types($module, tree, node, node_id, /)
--

Registers the tree vocabulary used to convert id trees.

Called once by strideweave.core.layout at import; not part of the public API.

Args:
    tree: the Tree class (a tuple subclass).
    node: the Node enum with members Leaf, Push and Pop.
    node_id: the class of Node.id(k) markers.

Returns:
    None.
""",
    "_resolve_plan": """_resolve_plan($module, name, operands, accumulator_dtype, /)
--

Resolves the central plan of a built-in operation.

Args:
    name: the operation's plan name ('reduce_sum').
    operands: a tuple of DTypes (tensors) and numbers (weak scalars).
    accumulator_dtype: a DType, or None when not given.

Returns:
    tuple: the raw plan.
""",
    "_snapshot_finalize": """_snapshot_finalize($module, snapshot, name, capabilities, /)
--

Finalizes a snapshot once from raw capabilities.

Returns:
    None.
""",
    "_snapshot_new": """_snapshot_new($module, /)
--

A fresh, unfinalized capability snapshot for one carrier instance (freed with the returned
object).

Returns:
    object: an opaque snapshot.
""",
    "dispatch_move": """dispatch_move(source_class, destination_class)
--

The move operation class for the exact carrier class pair.

Matches classes by identity: a subclass does not inherit its parent's entry. Pairs without
an entry use ElementwiseMoveOperation.

Args:
    source_class: a Carrier subclass.
    destination_class: a Carrier subclass.

Returns:
    type: a MoveOperation subclass.

Examples:
    >>> from strideweave import CPU, FileBacked
    >>> from strideweave.carriers.move import dispatch_move
    >>> dispatch_move(CPU, FileBacked).__name__
    'CpuToFileBackedMoveOperation'
    >>> dispatch_move(CPU, CPU).__name__
    'ElementwiseMoveOperation'
""",
    "einsum": """einsum($module, lhs, rhs, description)
--

A contraction described by a layout command string (strideweave.einops.einsum): shared
symbols absent from the output are summed over; shared symbols the output names are batch
symbols.

Args:
    lhs: the left Tensor.
    rhs: the right Tensor.
    description: the command, such as 'a b, c b -> a c'.

Returns:
    Tensor: the contraction.

Raises:
    TypeError: 'description must be a str', 'lhs must be a Tensor', 'rhs must be a Tensor',
        'Tensor backing carriers must match'.
    ValueError: from the command parser, and "Einsum shared dimension 'b' has mismatched
        logical size".

Examples:
    >>> a = Tensor(Generic([1.0, 2.0, 3.0, 4.0]), 0, Layout(Shape(2, 2), Stride(1, 2)))
    >>> y = einsum(a, a, 'i k, j k -> i j')
    >>> y.layout, y[0, 1]
    ((2,2):(1,2), 14.0)
    >>> einsum(None, None, 1)
    Traceback (most recent call last):
    ...
    TypeError: description must be a str
""",
    "execute_lowered_operation": """execute_lowered_operation($module, operation, /, *inputs)
--

Runs operation._forward(*inputs) the way a composite carrier runs an inner operation: no
saved inputs, no autograd context.

Sealed: a Python override of _execute_lowered is not consulted.

Args:
    operation: the Operation to run.
    *inputs: its forward arguments.

Returns:
    Tensor: the result.

Raises:
    TypeError: 'Operation._forward must return a Tensor'.

Examples:
    >>> from strideweave.carriers.operation_helpers import execute_lowered_operation
    >>> x = Tensor(Generic([-1.0, 2.0]), 0, Layout(Shape(2), Stride(1)))
    >>> op = GenericReLUOperation()
    >>> y = execute_lowered_operation(op, x)
    >>> y[0], y[1], y.autograd_ctx is None, op.inputs()
    (0, 2.0, True, ())
""",
    "is_grad_enabled": """is_grad_enabled($module, /)
--

Whether operations record the autograd graph on this thread (True by default in every
thread).

Returns:
    bool: the grad mode of the calling thread.

Examples:
    >>> is_grad_enabled()
    True
""",
    "matmul": """matmul($module, lhs, rhs)
--

Contracts the second mode of both operands: out[i, j] = sum over k of lhs[i, k] * rhs[j, k],
that is lhs @ rhs.T.

The output layout is canonical column-major over (lhs mode 0, rhs mode 0), nesting kept.

Args:
    lhs: a two-mode Tensor.
    rhs: a two-mode Tensor whose second mode has lhs's logical size, over a carrier of
        exactly the same class.

Returns:
    Tensor: the product.

Raises:
    TypeError: 'lhs must be a Tensor', 'rhs must be a Tensor', 'Tensor backing carriers must
        match'.
    ValueError: 'lhs must have a two-mode layout', 'rhs must have a two-mode layout',
        'Matmul inner dimensions must match'.

Examples:
    >>> a = Tensor(Generic([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), 0, Layout(Shape(2, 3), Stride(1, 2)))
    >>> b = Tensor(Generic([1.0, 1.0, 1.0]), 0, Layout(Shape(1, 3), Stride(1, 1)))
    >>> y = matmul(a, b)
    >>> y.layout, y[0, 0], y[1, 0]
    ((2,1):(1,2), 9.0, 12.0)
""",
    "move": """move(tensor, destination)
--

Moves tensor's values into destination and releases the source carrier: move_async(tensor,
destination).wait().

The operation class comes from the move registry for the exact pair (type(tensor.carrier),
type(destination)); the result is a Tensor over destination at offset 0 with tensor's
layout. The destination needs the layout's cosize slots (an empty FileBacked grows to it).
The source carrier is released only after the copy succeeded; a failed move leaves both
carriers as they were. With grad mode on, the result's autograd context is the move and
backward returns the gradient in fresh storage of the source carrier's class.

Args:
    tensor: the Tensor to move.
    destination: a live, mutable Carrier of tensor's dtype, not tensor's own carrier.

Returns:
    Tensor: the moved tensor, backed by destination.

Examples:
    >>> from strideweave import FileBacked, Generic, Layout, Shape, Stride, Tensor, move
    >>> t = Tensor(Generic([1.0, 2.0]), 0, Layout(Shape(2), Stride(1)))
    >>> m = move(t, FileBacked())
    >>> m[1], t.carrier.is_released()
    (2.0, True)
""",
    "move_async": """move_async(tensor, destination)
--

Starts moving tensor's values into destination and returns a completion handle.

Validation (the checks of move, in the same order) happens now and raises directly. The move
then owns both carriers until its outcome is recorded: is_owned() is True on both, and other
threads' writes, release() and moves of them raise RuntimeError('Carrier is owned by a
pending move and is not mutable', or 'tensor carrier is owned by a pending move'). A
TransferRoute is prepared and submitted on this thread (a failing or refusing prepare raises
here); a ProviderCompletion it returns, and a bulk CPU/FileBacked transfer of 1 MiB or more,
complete on the library's background move executor while the call returns at once. Every
other move completes before move_async returns. wait() gives the moved Tensor or raises the
move's failure; the source carrier is released only when the move succeeds. Dropping the
handle neither waits for nor cancels the move.

Args:
    tensor: the Tensor to move (one Tensor, not a sequence).
    destination: a live, mutable Carrier of tensor's dtype (one carrier, not a sequence).

Returns:
    AwaitMove: the handle of the move.

Examples:
    >>> from strideweave import CPU, FileBacked, Layout, Shape, Stride, Tensor
    >>> from strideweave.carriers.move import move_async
    >>> t = Tensor(CPU(2), 0, Layout(Shape(2), Stride(1)))
    >>> handle = move_async(t, FileBacked(dtype=t.carrier.dtype()))
    >>> m = handle.wait()
    >>> handle.done, handle.wait() is m, t.carrier.is_released()
    (True, True, True)
""",
    "mul": """mul($module, tensor, scalar)
--

tensor * scalar per element; with a Tensor scalar this is elementwise_mul(tensor, scalar).

Args:
    tensor: the input Tensor.
    scalar: a number (bool included), or a Tensor.

Returns:
    Tensor: a fresh tensor with the input's layout (offset 0).

Raises:
    TypeError: 'tensor must be a Tensor', 'scalar must be a numerical scalar'.

Examples:
    >>> x = Tensor(Generic([1.0, -2.0]), 0, Layout(Shape(2), Stride(1)))
    >>> y = mul(x, 3)
    >>> y[1], y.autograd_ctx.ctx['scalar']
    (-6.0, 3)
""",
    "neg": """neg($module, tensor)
--

-tensor, exactly mul(tensor, -1).

Args:
    tensor: the input Tensor.

Returns:
    Tensor: a fresh tensor with the input's layout (offset 0).

Raises:
    TypeError: 'tensor must be a Tensor'.

Examples:
    >>> x = Tensor(Generic([1.0, -2.0]), 0, Layout(Shape(2), Stride(1)))
    >>> neg(x)[1]
    2.0
""",
    "permute": """permute($module, tensor, /, *order)
--

A view with the top-level modes reordered (each moved whole); order is variadic or one list
or tuple.

Args:
    tensor: the input Tensor.
    *order: a permutation of range(rank), exact ints.

Returns:
    Tensor: a view over the same carrier.

Raises:
    TypeError: 'tensor must be a Tensor', 'Permutation dimensions must be integers'.
    ValueError: 'Permutation dimensions must reorder every layout mode'.

Examples:
    >>> x = Tensor(Generic(list(range(6))), 0, Layout(Shape(2, 3), Stride(1, 2)))
    >>> permute(x, 1, 0).layout, permute(x, [1, 0])[2, 1]
    ((3,2):(2,1), 5)
""",
    "pow": """pow($module, tensor, exponent)
--

tensor ** exponent per element, for a scalar exponent.

Generic computes with Python's ** (ints stay ints); CPU in float32, or exact checked powers
for Int32.

Args:
    tensor: the input Tensor.
    exponent: a number (not a Tensor).

Returns:
    Tensor: a fresh tensor with the input's layout (offset 0).

Raises:
    TypeError: 'tensor must be a Tensor', 'exponent must be a numerical scalar'.

Examples:
    >>> t = Tensor(Generic([1, 2, 3]), 0, Layout(Shape(3), Stride(1)))
    >>> y = pow(t, 3)
    >>> y[0], y[1], y[2]
    (1, 8, 27)
""",
    "rearrange": """rearrange($module, tensor, output, selection=None)
--

A view whose layout is Layout.rearrange(tensor.layout, output, selection); a str output is a
layout command, run by strideweave.einops.rearrange.

Args:
    tensor: the input Tensor.
    output: a Tree of Node.id(k) markers (and Node.Leaf singletons), or a command string
        such as 'a b -> b a'.
    selection: a Tree saying which pieces are extracted, or None for every leaf of the
        layout (None only with a str output).

Returns:
    Tensor: a view over the same carrier, at the same offset.

Raises:
    TypeError: 'tensor must be a Tensor', 'output must be a Tree', 'selection must be a Tree
        or None', 'String rearrange descriptions do not accept an explicit selection'.
    ValueError: from Layout.rearrange or the command parser.

Examples:
    >>> x = Tensor(Generic(list(range(24))), 0, Layout(Shape(2, 3, 4), Stride(1, 2, 6)))
    >>> rearrange(x, Tree(Node.id(2), Node.id(0), Node.id(1))).layout
    (4,2,3):(6,1,2)
    >>> rearrange(x, 'a b c -> c (a b)').layout
    (4,(2,3)):(6,(1,2))
""",
    "reduce": """reduce($module, tensor, description=<unset>)
--

out[i] = sum over j of tensor[i, j] for a two-mode tensor. The output layout is canonical
column-major over mode 0 (one nesting level flattened). With a description,
strideweave.einops.reduce.

Args:
    tensor: the input Tensor.
    description: a reduce command such as 'a b -> a'; omitted for the two-mode form.

Returns:
    Tensor: the sums.

Raises:
    TypeError: 'tensor must be a Tensor', 'description must be a str' (None included).
    ValueError: 'tensor must have a two-mode layout', or from the command parser.

Examples:
    >>> x = Tensor(Generic([1, 2, 3, 4, 5, 6]), 0, Layout(Shape(2, 3), Stride(1, 2)))
    >>> y = reduce(x)
    >>> y.layout, y[0], y[1]
    (2:1, 9, 12)
    >>> reduce(x, 'a b -> 1')[0]
    21
""",
    "register_move_operation": """register_move_operation(source_class, destination_class, operation_class)
--

Registers operation_class for the exact carrier class pair in the process-global move
registry.

The entry applies to these two classes only, not to subclasses. A pair that already has an
entry (built-in ones included) is refused and keeps it.

Args:
    source_class: a Carrier subclass.
    destination_class: a Carrier subclass.
    operation_class: a MoveOperation subclass.

Returns:
    None.

Examples:
    >>> from strideweave import Generic
    >>> from strideweave.carriers.move import ElementwiseMoveOperation, dispatch_move, register_move_operation, unregister_move_operation
    >>> class Mine(Generic): ...
    >>> class MyMove(ElementwiseMoveOperation): ...
    >>> register_move_operation(Mine, Generic, MyMove)
    >>> dispatch_move(Mine, Generic) is MyMove
    True
    >>> unregister_move_operation(Mine, Generic) is MyMove
    True
""",
    "set_grad_enabled": """set_grad_enabled($module, enabled)
--

Sets the grad mode of the calling thread.

Args:
    enabled: any object; its truth value is used.

Returns:
    None.

Examples:
    >>> set_grad_enabled(0)
    >>> is_grad_enabled()
    False
    >>> set_grad_enabled(True)
""",
    "unregister_move_operation": """unregister_move_operation(source_class, destination_class)
--

Removes the registry entry of the exact carrier class pair.

Args:
    source_class: a Carrier subclass.
    destination_class: a Carrier subclass.

Returns:
    type: the operation class that was registered.

Examples:
    >>> from strideweave import Generic
    >>> from strideweave.carriers.move import unregister_move_operation
    >>> unregister_move_operation(Generic, Generic)
    Traceback (most recent call last):
    KeyError: 'no move operation is registered for (Generic, Generic)'
""",
    "view": """view($module, tensor, key)
--

A view: one key per top-level mode. An int removes the mode (its offset is added); a slice
(step None or 1, non-empty) keeps part of a leaf mode, and only the whole slice [:] is
allowed on a nested mode. t[...] with a slice anywhere in the key calls this.

Args:
    tensor: the input Tensor.
    key: a tuple with one int or slice per top-level mode; anything else is taken as a
        1-tuple.

Returns:
    Tensor: a view over the same carrier.

Raises:
    TypeError: 'tensor must be a Tensor', 'View key must be an integer or slice'.
    ValueError: 'View keys must include exactly one key per top-level mode', 'View slices do
        not support steps', 'View slices must be non-empty', 'Only whole slices are
        supported for non-leaf modes', 'View integer key is out of domain'.

Examples:
    >>> g = Generic([float(i) for i in range(50)])
    >>> x = Tensor(g, 0, Layout(Shape(5, 10), Stride(1, 5)))
    >>> v = view(x, (2, slice(2, 5)))
    >>> v.layout, v.offset, v.carrier is g, v[0]
    (3:5, 12, True, 12.0)
""",
}

# Entries that share one C table entry or one text (Shape and Stride, the
# carriers' common methods), written once above.
for _path, _same in (
    ("Shape.__reduce__", "Layout.__reduce__"),
    ("Shape.size", "Shape.logical_size"),
    ("Stride.__reduce__", "Layout.__reduce__"),
    ("Stride.append", "Shape.append"),
    ("Stride.concat", "Shape.concat"),
    ("Stride.depth", "Shape.depth"),
    ("Stride.is_int", "Shape.is_int"),
    ("Stride.top_level", "Shape.top_level"),
):
    DOCS[_path] = DOCS[_same]
