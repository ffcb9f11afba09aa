//! `tessera`: one binary, every role, chosen by a subcommand.

fn main() {
    println!("tessera");
}
