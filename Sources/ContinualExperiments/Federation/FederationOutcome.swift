/// What a federated run measured, per round and per client (written to `runs/<id>/federation/`).
///
/// Per-client accuracy matrices, metrics and their aggregates are the run's `population/` group
/// (the evaluated clients are its users); this value holds what only a federation has.
public struct FederationOutcome: Sendable, Equatable {
    public var config: FederationConfig
    public var clients: Int
    /// q: the per-round sampling rate (Poisson) or invited/N (uniform).
    public var samplingRate: Double
    /// Parameters that travel (the shared part), and the model's total.
    public var sharedParameters: Int
    public var totalParameters: Int

    // Per round (index = round).
    public var invited: [Int] = []
    /// Invited clients whose device allowed training that day.
    public var available: [Int] = []
    /// Clients whose update reached the aggregate (available, had new data, finished).
    public var completed: [Int] = []
    /// Of the completed, how many were adversaries.
    public var adversarial: [Int] = []
    public var bytesUp: [Int] = []
    public var bytesDown: [Int] = []
    /// Energy of the round's local training (all clients, incl. personal training), joules.
    public var trainingJoules: [Double] = []
    /// Energy of the round's transfers (bytes × radio J/B), joules.
    public var radioJoules: [Double] = []
    /// Mean L2 norm of the updates the server received (before clipping); NaN with none.
    public var meanUpdateNorm: [Double] = []
    /// ε after this round at `config.delta` (NaN without noise; +∞ when clipping without noise).
    public var epsilon: [Double] = []
    /// Rows the round's local training processed (all clients, incl. personal training).
    public var samplesTrained: [Int] = []
    /// Whether the aggregation rule ran (false: no update, or too few for the rule).
    public var aggregated: [Bool] = []
    /// Clients that started their local round and dropped out before uploading
    /// (`dropout_probability`); and clients whose round missed `round_deadline` (stragglers).
    public var dropped: [Int] = []
    public var stragglers: [Int] = []

    // Per evaluation (rounds in `evaluatedRounds`), over the evaluated clients.
    public var evaluatedRounds: [Int] = []
    /// Mean accuracy of the global model on each evaluated client's current test data (NaN unless
    /// `share` is "all").
    public var globalAccuracy: [Double] = []
    /// Mean accuracy of the model each phone predicts with, on its current test data.
    public var personalAccuracy: [Double] = []
    /// Quantiles (the population's levels) of those accuracies over clients.
    public var globalQuantiles: [[Double]] = []
    public var personalQuantiles: [[Double]] = []

    // Per client (index = client id).
    public var invitations: [Int] = []
    public var participations: [Int] = []
    public var isAdversary: [Bool] = []
    public var devicePattern: [String] = []
    public var clientBytesUp: [Int] = []
    public var clientBytesDown: [Int] = []
    public var clientJoules: [Double] = []
    /// Rounds in which the client dropped out, and in which it missed the deadline.
    public var clientDropouts: [Int] = []
    public var clientStraggles: [Int] = []

    // Per evaluated client (ids in `evaluatedClients`).
    public var evaluatedClients: [Int] = []
    /// Final-row accuracy of the final global model on each of the client's experiences (share
    /// "all"; else empty).
    public var globalFinalAccuracy: [[Double]] = []

    // The partition of a labelled stream among the clients (`federation.partition`; else empty).
    /// Training and test samples per client (row) and experience.
    public var partitionTrainCounts: [[Int]] = []
    public var partitionTestCounts: [[Int]] = []
    /// Training samples per client (row) and label (`partitionLabels`, ascending).
    public var partitionLabelCounts: [[Int]] = []
    public var partitionLabels: [Int] = []
    /// The draw that was accepted (1 = the first; see `PartitionConfig`).
    public var partitionAttempts = 0

    /// SCAFFOLD: the server's control c after the last round, and the mean of all N clients'
    /// controls cᵢ (equal to c up to rounding: the method's invariant); FedDyn: its h and the
    /// mean of the clients' ∇Lₖ (equal likewise). Empty otherwise.
    public var serverControl: [Float] = []
    public var clientControlMean: [Double] = []

    /// FedBuff's server steps, staleness and buffers (`federation.fedbuff`; nil otherwise).
    public var fedbuff: FedBuffTrace? = nil
    /// The per-round trace of the server and client steps (`federation.trace`; nil otherwise).
    public var trace: FederationTrace? = nil

    // Wall times (the only numbers that differ between two runs of the same config).
    /// Building the clients (data generation, device days, learners), seconds.
    public var setupSeconds = 0.0
    /// The rounds (training, exchange, server step, evaluation), seconds.
    public var roundSeconds = 0.0
    /// Σ over clients of their local training time: the CPU time of training proper, seconds.
    public var clientTrainSeconds = 0.0

    public init(config: FederationConfig, clients: Int, samplingRate: Double, sharedParameters: Int, totalParameters: Int) {
        self.config = config
        self.clients = clients
        self.samplingRate = samplingRate
        self.sharedParameters = sharedParameters
        self.totalParameters = totalParameters
    }

    /// Client updates that reached the server.
    public var clientUpdates: Int { completed.reduce(0, +) }

    /// Global ACC — the one definition that `continual inspect`, `continualkit table` and the
    /// README print (docs/federated.md): the mean, over the evaluated clients and *every*
    /// experience of each, of the final global model's accuracy (`globalFinalAccuracy`), NaN
    /// entries skipped; NaN unless `share` is "all". It is the global model's counterpart of the
    /// personal ACC (the mean final row of the clients' accuracy matrices), so with
    /// `personal: "global"` the two coincide. Summed in client order, then experience order.
    public var globalACC: Double { Self.globalACC(globalFinalAccuracy) }

    /// `globalACC` of a stored (clients × experiences) matrix.
    public static func globalACC(_ matrix: [[Double]]) -> Double {
        var sum = 0.0, n = 0
        for row in matrix { for v in row where !v.isNaN { sum += v; n += 1 } }
        return n > 0 ? sum / Double(n) : .nan
    }

    /// ε after the last round (NaN when no noise).
    public var finalEpsilon: Double { epsilon.last ?? .nan }
}
