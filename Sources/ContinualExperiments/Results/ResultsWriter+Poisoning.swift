import ContinualHDF5

extension ResultsWriter {
    /// `runs/<id>/poisoning/`: the attack as attributes, the poisoned row counts and the final
    /// model's attack success rate per experience and its mean. Clean accuracy is the run's own
    /// accuracy matrix (test sets are never poisoned).
    static func writePoisoning(_ p: PoisoningOutcome, into run: HDF5Group) throws {
        let g = try run.createGroup("poisoning")
        let a = g.attributes
        try a.set("meaning", "poisoning of the user's own training stream; test sets are clean (clean accuracy = accuracy_matrix)")
        try a.set("label_flip", p.config.labelFlip)
        try a.set("backdoor_fraction", p.config.backdoor?.fraction ?? 0)
        if let b = p.config.backdoor {
            try a.set("backdoor_target", Int64(b.target))
            try a.set("backdoor_features", b.features.map(Int64.init))
            try a.set("backdoor_values", b.values)
        }
        try a.set("attack_success_rate", p.meanAttackSuccess)
        let T = p.attackSuccess.count
        func counts(_ v: [Int], _ name: String, _ meaning: String) throws {
            let d = try g.write(v.map(Int64.init), shape: [v.count], name: name)
            try d.attributes.set("meaning", meaning)
        }
        try counts(p.record.backdoored.map(\.count), "backdoored", "training samples carrying the trigger, per experience")
        try counts(p.record.flipped.map(\.count), "flipped", "training samples with a flipped label, per experience")
        let asr = try g.write(p.attackSuccess, shape: [T], name: "attack_success")
        try asr.attributes.set("meaning", "fraction of the experience's clean test samples (label not the target) that the final "
            + "model classifies as the target once the trigger is stamped; NaN without a backdoor")
        try asr.attributes.set("units", "fraction (0..1)")
    }
}
