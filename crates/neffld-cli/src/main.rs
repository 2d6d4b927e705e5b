fn main() {
    println!("neffld {}", env!("CARGO_PKG_VERSION"));
}
