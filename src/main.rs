fn main() {
    println!("prosecutor: under construction");
}
