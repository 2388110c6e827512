/// The passes that probe one type (see `SchemaProbe`): each pass decodes the type from a
/// `ProbeDecoder` over the same `SchemaNode` tree, under rules that steer the decoding code down
/// another path.
final class TypeProbe {
    let root = SchemaNode()
    /// What a pass decoded to (the first success), answered when a parent asks for this type.
    private(set) var value: Any? = nil
    private let probe: SchemaProbe
    private let decode: (any Decoder) throws -> Any?
    /// Rules still to try: a position's first ask failing or a choice's other case, alone or
    /// (a choice case that opens other keys, `"precision"` then `"loss_scale"`) with one rule at
    /// a position asked after it.
    private var queue: [[ObjectIdentifier: Int]] = []
    private var queued = Set<[ObjectIdentifier: Int]>()
    private var passes = 0
    /// Passes one type may take (a safety bound; real configs take far fewer).
    static let maximumPasses = 2_000

    init(probe: SchemaProbe, decode: @escaping (any Decoder) throws -> Any?) {
        self.probe = probe
        self.decode = decode
    }

    /// Every pass: the plain decode, each queued variant, then each key still untyped alone.
    func explore() {
        settle(absent: [], rules: [:])
        var next = 0
        while next < queue.count, passes < Self.maximumPasses {
            let rules = queue[next]
            next += 1
            settle(absent: [], rules: rules)
        }
        // A key still untyped is probed alone in its object (exclusive keys, "capacity" or
        // "capacity_bytes", each show when the other is absent), then beside each other key
        // ("run" is read only with "results").
        for (object, key, _) in root.untypedStrictKeys() where passes < Self.maximumPasses {
            isolate(key, in: object, with: nil)
            for partner in object.strictKeys ?? [] where partner != key && object.child(key).isEmpty {
                isolate(key, in: object, with: partner)
            }
        }
    }

    /// A pass with every key of `object` absent but `key` (and `partner`).
    private func isolate(_ key: String, in object: SchemaNode, with partner: String?) {
        let others = (object.strictKeys ?? []).filter { $0 != key && $0 != partner }
        settle(absent: Set(others.map { ObjectIdentifier(object.child($0)) }), rules: [:])
    }

    /// Passes until one succeeds: a pass that ends in an error makes the last key it asked about
    /// absent in the next, until a pass succeeds or the blamed key is absent already.
    private func settle(absent start: Set<ObjectIdentifier>, rules: [ObjectIdentifier: Int]) {
        var absent = start
        while passes < Self.maximumPasses {
            passes += 1
            let pass = ProbePass(absent: absent, rules: rules)
            defer { enqueue(pass.asked, after: rules) }
            do {
                if let v = try decode(ProbeDecoder(node: root, pass: pass, probe: probe, codingPath: [])) { value = value ?? v }
                return
            } catch {
                guard let blamed = pass.lastKey.map(ObjectIdentifier.init), !absent.contains(blamed) else { return }
                absent.insert(blamed)
            }
        }
    }

    /// Queues a rule for each position asked (a primitive's first 1, 2 or 3 asks failing; each case of a
    /// choice after the first), alone, and after a single choice rule, with it.
    private func enqueue(_ asked: [(node: SchemaNode, choices: Int)], after rules: [ObjectIdentifier: Int]) {
        let gate = rules.count == 1 ? rules.first.flatMap { rule in
            asked.firstIndex { ObjectIdentifier($0.node) == rule.key && $0.choices > 0 } } : nil
        guard rules.isEmpty || gate != nil else { return }
        for (index, (node, choices)) in asked.enumerated() where index > (gate ?? -1) {
            let id = ObjectIdentifier(node)
            guard rules[id] == nil else { continue }
            for variant in choices == 0 ? [1, 2, 3] : Array(stride(from: 1, to: choices, by: 1)) {
                let next = rules.merging([id: variant]) { a, _ in a }
                if queued.insert(next).inserted { queue.append(next) }
            }
        }
    }
}
