import ContinualCore

/// What one client did in a traced round besides its `RoundEntry` (`federation.trace`; sent to
/// every rank with the entry). Empty arrays and NaN: the client or the algorithm has none.
struct ClientTrace: Sendable, Equatable {
    /// Local steps the round ran, and of them the steps applied (a mixed-precision step skipped
    /// for overflow is not).
    var steps = 0
    var appliedSteps = 0
    /// The update before the encoding (only with an encoding other than float32).
    var rawUpdate: [Float] = []
    /// `FederatedClient.control` before and after the round: SCAFFOLD's cᵢ, FedDyn's ∇Lₖ.
    var stateBefore: [Float] = []
    var stateAfter: [Float] = []
    /// The learner's parameters after the local round (all of them, the phone's head included).
    var local: [Float] = []
    /// The personal learner's parameters before and after the round (Ditto, APFL).
    var personalBefore: [Float] = []
    var personalAfter: [Float] = []
    /// APFL's mixing weight α before and after the round.
    var alphaBefore = Double.nan
    var alphaAfter = Double.nan
    /// MOON's previous model (the hidden layers' parameters) the round's term used.
    var moonPrevious: [Float] = []
    /// The round's data: rows × `dimension` features and their labels (what the local round trained on).
    var dimension = 0
    var inputs: [Float] = []
    var labels: [Int] = []
    /// The rows of the round's data each local step visited, step after step (`BatchOrderLog`):
    /// the learner's loops, and the personal learner's (Ditto, APFL). Empty when not stated.
    var order: [Int] = []
    var personalOrder: [Int] = []
    /// FLwF-2T's first teacher: the strategy's LwF old model (the client's model at its last
    /// consolidation) the round distilled; empty without one.
    var teacher: [Float] = []

    func encode(into w: inout ByteWriter) {
        w.ints([steps, appliedSteps, dimension])
        w.ints(labels)
        w.ints(order)
        w.ints(personalOrder)
        w.doubles([alphaBefore, alphaAfter])
        for v in [rawUpdate, stateBefore, stateAfter, local, personalBefore, personalAfter, moonPrevious, inputs, teacher] { w.floats(v) }
    }

    static func decode(_ r: inout ByteReader) throws -> ClientTrace {
        var t = ClientTrace()
        let s = try r.ints(), labels = try r.ints()
        (t.order, t.personalOrder) = (try r.ints(), try r.ints())
        let a = try r.doubles()
        guard s.count == 3, a.count == 2 else { throw CheckpointError.mismatch("a client's trace is damaged") }
        (t.steps, t.appliedSteps, t.dimension, t.alphaBefore, t.alphaAfter) = (s[0], s[1], s[2], a[0], a[1])
        t.labels = labels
        (t.rawUpdate, t.stateBefore, t.stateAfter) = (try r.floats(), try r.floats(), try r.floats())
        (t.local, t.personalBefore, t.personalAfter, t.moonPrevious) = (try r.floats(), try r.floats(), try r.floats(), try r.floats())
        (t.inputs, t.teacher) = (try r.floats(), try r.floats())
        return t
    }
}

/// A `ClientTrace` held by reference (in `RoundEntry`).
final class ClientTraceBox: Sendable, Equatable {
    let value: ClientTrace
    init(_ value: ClientTrace) { self.value = value }
    static func == (a: ClientTraceBox, b: ClientTraceBox) -> Bool { a.value == b.value }
}

/// One traced round of the server (`federation.trace`), written to
/// `runs/<id>/federation/trace/round_<r>/` (docs/results-format.md).
public struct TracedRound: Sendable, Equatable {
    public var round = 0
    /// Every parameter of the global model before and after the round's server step.
    public var globalBefore: [Float] = []
    public var globalAfter: [Float] = []
    /// The rule's aggregate (or DP-FedAvg's noisy mean) and the update the server optimizer
    /// received after the algorithms' transforms (pFedMe's β, FedDyn's −h/α); empty without one.
    public var aggregate: [Float] = []
    public var serverUpdate: [Float] = []
    /// The server optimizer's moments after the round (empty for SGD).
    public var serverFirst: [Float] = []
    public var serverSecond: [Float] = []
    /// The algorithms' server state before and after the round (SCAFFOLD's c, FedDyn's h).
    public var stateBefore: [Float] = []
    public var stateAfter: [Float] = []
    /// The round's entries in client order, and what the clients traced.
    var entries: [RoundEntry] = []
}

/// The run's trace: the shared parameters' indices into the model's and the traced rounds.
public struct FederationTrace: Sendable, Equatable {
    public var sharedIndex: [Int] = []
    public var rounds: [TracedRound] = []

    /// float32 values a trace of `rounds` rounds holds at most, with `clients` entries a round, a
    /// model of `parameters` values of which `shared` travel: per round two models and six
    /// shared-sized server arrays; per client three shared-sized uploads and states, and four
    /// model-sized copies (an overestimate: most algorithms fill a few of them).
    static func values(rounds: Int, clients: Int, parameters: Int, shared: Int) -> Int {
        rounds * (2 * parameters + 6 * shared + clients * (5 * shared + 4 * parameters))
    }
}
