// The leak checker's demo: a small inventory that forgets to free two things. Run it under
// stackwalk-leakcheck (scripts/demo.sh does) to see them reported with their stacks.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

namespace shop {

struct Item {
  std::string name;
  int count;
};

class Inventory {
 public:
  // Leak: the Item is never deleted (the map keeps a raw pointer and the destructor forgets it).
  __attribute__((noinline)) void Add(const std::string& name, int count) {
    items_[name] = new Item{name + " (a name long enough to leave the small-string buffer)", count};
  }
  int Total() const {
    int total = 0;
    for (const auto& [name, item] : items_) total += item->count;
    return total;
  }

 private:
  std::map<std::string, Item*> items_;
};

// Leak: a C buffer nobody frees.
__attribute__((noinline)) char* Label(const char* text) {
  char* label = static_cast<char*>(std::malloc(std::strlen(text) + 1));
  std::strcpy(label, text);
  return label;
}

}  // namespace shop

int main() {
  shop::Inventory inventory;
  inventory.Add("apples", 3);
  inventory.Add("pears", 4);
  std::printf("%s: %d items\n", shop::Label("inventory"), inventory.Total());
  return 0;
}
