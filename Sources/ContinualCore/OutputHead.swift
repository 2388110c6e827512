/// The output and loss of a network.
///
/// `binary`: one logit, sigmoid, binary cross-entropy; prediction is `logit > 0`.
/// `multiclass(k)`: k logits, softmax, cross-entropy; prediction is the arg-max (lowest index
/// wins ties). Both losses are computed from logits in a numerically stable form.
public enum OutputHead: Sendable, Equatable, Hashable {
    case binary
    case multiclass(classes: Int)

    /// Number of logits the last layer produces.
    public var logitCount: Int {
        switch self {
        case .binary: return 1
        case .multiclass(let k): return k
        }
    }

    /// Number of label values (2 for binary).
    public var classCount: Int {
        switch self {
        case .binary: return 2
        case .multiclass(let k): return k
        }
    }
}
